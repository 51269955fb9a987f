//! The help around the arguments: each command's EXAMPLES and EXIT STATUS blocks, as text.
//!
//! Every example line fits in 78 columns (a longer one continues on the next line after ` \`),
//! so clap's wrapping at an 80-column terminal never cuts a command. `{n}` (a command's task
//! count) is written as it reads; [`command`](crate::clap_command::command) keeps clap from
//! reading it as a line break. `clap_command`'s tests parse every example here, in the README
//! and in `docs/`.

/// `scalelab --help`.
pub const TOP: &str = "\
EXAMPLES:
  scalelab list
  scalelab run page_fault                     # 1,2,4,… up to the online CPUs
  scalelab run page_fault -p lines=8 --tasks 1,2 --runs 5 --duration 2s
  scalelab run atomic -p mode=cmpxchg-retry --tasks 1..4 --mode processes
  scalelab run --cmd 'make -j{n} vmlinux' --prepare 'make clean' \\
      --tasks 1,2 --runs 6
  scalelab run --cmd 'tar xf src.tar' --tasks 1 \\
      --step md5='find src -type f -exec md5sum {} +' --step rm='rm -rf src'
  scalelab run create_unlink -p shared=true --tasks 1,2 --locks
  scalelab locks last
  scalelab ls ; scalelab show last ; scalelab show 3 --json
  scalelab export last --format csv > run.csv
  scalelab export last > run.json ; scalelab import run.json
  scalelab doctor
  scalelab push --to postgres://scalelab@db.example/perf   # a team's store
  scalelab serve                              # dashboard on 127.0.0.1:8080
  scalelab completions bash > /etc/bash_completion.d/scalelab

EXIT STATUS:
  0    success
  1    a regression was found (compare, ab, history --check)
  2    a usage or runtime error, said on stderr with its fix; also a run in
       which every trial failed (it is stored: `scalelab show RUN --json`)
  130  interrupted by Ctrl-C or SIGTERM (finished trials are kept)
  A closed output pipe (`scalelab ls | head -1`) ends scalelab quietly, 0.

READING THE RESULTS:
  README.md (a five-minute tour) and docs/ in scalelab's sources: one page
  per subject - docs/reading-results.md, docs/explain.md, docs/compare.md,
  docs/commands.md (--cmd, --metric), docs/team-lab.md and more.";

/// `scalelab run --help`.
pub const RUN: &str = "\
EXAMPLES:
  scalelab run page_fault                     # 1,2,4,… up to the online CPUs
  scalelab run page_fault -p lines=8 --tasks 1,2 --runs 5 --duration 2s
  scalelab run atomic -p mode=cmpxchg-retry --tasks 1..4 --mode processes
  scalelab run spin --tasks 1,2 --variant stock --tag kernel=6.8
  scalelab run --cmd 'make -j{n} vmlinux' --prepare 'make clean' \\
      --tasks 1,2 --runs 6
  scalelab run --cmd './bench -t {n}' --ops-regex 'ops: ([0-9]+)' --runs 5
  id=$(scalelab run spin --tasks 1,2 -q)      # -q prints only the run id

A command (--cmd) runs once per trial, start to end: --duration, --warmup,
--mode, --pin, --workdir and --no-counters apply to built-in workloads only
(more trials: --runs; work per trial: --ops or --ops-regex; unmeasured runs
first, for a cold cache or a new file system: --warmup-runs K).

EXIT STATUS:
  0    the run is stored
  2    a usage or runtime error, or every trial failed (the run is stored)
  130  interrupted by Ctrl-C or SIGTERM (the finished trials are stored)";

/// `scalelab ls --help`.
pub const LS: &str = "\
EXAMPLES:
  scalelab ls
  scalelab ls --workload page_fault --tag kernel=6.8
  scalelab ls --variant patched --json
  scalelab ls --host build-48 --db postgres://scalelab@db.example/perf";

/// `scalelab show --help`.
pub const SHOW: &str = "\
EXAMPLES:
  scalelab show last
  scalelab show last~1 --json
  scalelab show run.json                      # an exported run";

/// `scalelab export --help`.
pub const EXPORT: &str = "\
EXAMPLES:
  scalelab export last > run.json
  scalelab export 12 --format csv > run.csv";

/// `scalelab import --help`.
pub const IMPORT: &str = "\
EXAMPLES:
  scalelab export last > run.json             # on one machine
  scalelab import run.json                    # on another
  scalelab import runs/*.json                 # a run stored before is skipped";

/// `scalelab history --help`.
pub const HISTORY: &str = "\
EXAMPLES:
  scalelab history page_fault --at 2
  scalelab history page_fault -p lines=8 --metric ns_per_op --check
  scalelab history page_fault --host-class    # one series per machine class
  scalelab history --csv nightly.csv --json

EXIT STATUS:
  0    success (with --check: the newest segment did not regress)
  1    --check only: the newest segment is a regression
  2    a usage or runtime error; with --check, too few runs to judge";

/// `scalelab push --help`.
pub const PUSH: &str = "\
EXAMPLES:
  scalelab push --to postgres://scalelab@db.example/perf
  scalelab --db offline.db push --to postgres:///perf?host=/run/postgresql
  scalelab push --to team.db --workload page_fault --tag kernel=6.8
  scalelab push --to postgres://scalelab@db.example/perf --with-profiles

Runs still being measured are left for a later push. Without --with-profiles
perf.data files stay on this host: the copied runs keep their profiles' paths
and metadata. With it, each run's perf.data files and kallsyms snapshot are
stored in the target too (table run_files; at most 512 MiB a file), also for
runs pushed before without them; a host that lacks the files reads the
stored copies (`profile`, `explain`, `report`, `serve`), written on first use
into its own profiles folder for that store.

EXIT STATUS:
  0    every run is in the target (copied now or before), with files if asked
  1    --with-profiles: a profile file was not copied (each named on stderr)
  2    a usage or runtime error (what was copied before it stays copied)";

/// `scalelab serve --help`.
pub const SUBMIT: &str = "\
EXAMPLES:
  scalelab submit --class 'cpus>=32,arch=x86_64' run page_fault --profile
  scalelab submit --host lab-epyc-1 ab --a old/bench --b new/bench --tasks 1,8
  scalelab submit --every 'mon 03:00' --check-history run create_unlink
  scalelab submit --timeout 2h run --cmd '/opt/bench/build.sh {n}' --tasks 1,8

The queue lives in a team's PostgreSQL store (--db postgres://…, or
SCALELAB_DB). The job is checked as `scalelab JOB` would check it before it is
queued, and refused when its plan cannot end in time: longer than its
--timeout, or than the --max-job-time of every registered agent of its class.
Its runs carry the tags job=ID and job_attempt=K (`scalelab ls --tag
job=ID`). An agent runs built-in workloads; a job carrying a command runs only
on an agent started with --allow-cmd DIR (one program inside DIR) or
--allow-any-cmd. The submitter is recorded: the database role as the server
stamps it, the OS user and host as this machine says.

Classes: cpus, mem (GiB), arch, cpu (the CPU model), hypervisor (`bare`:
none), host; numbers take = != >= <= > <, text = != and ~ (contains),
case-insensitive.";

pub const QUEUE: &str = "\
EXAMPLES:
  scalelab queue                   # jobs and agents
  scalelab queue --json
  scalelab queue cancel 42
  scalelab queue wait 42 --timeout 2h && echo done

A queued job nobody can take says why (no live agent of its class, or the
agents of its class refuse its command). A running job shows its agent and
lease; one whose agent died is retried (up to submit --attempts), its partial
run kept as `incomplete`.";

pub const AGENT: &str = "\
EXAMPLES:
  scalelab agent --db postgres://lab@db/perf
  scalelab agent --db postgres://lab@db/perf --allow-cmd /opt/bench
  scalelab agent --db postgres://lab@db/perf --max-job-time 6h

A systemd unit is in contrib/scalelab-agent.service.

One agent per machine. It takes the oldest job its machine class matches,
waits for the machine to be quiet (no task runnable besides it, memory
available; --busy-wait), runs it as `scalelab JOB --tag job=ID`, renews its
lease while it runs, and records done (with its runs) or failed (with why).
A job past its timeout (its own, or from its plan; never past --max-job-time)
is killed and fails as timed out, its partial run kept as incomplete. A
malformed row is failed and the agent goes on. SIGTERM or Ctrl-C stops the
job in hand (its finished trials are kept), gives it back to the queue and
exits. --allow-cmd: read SECURITY.md first.";

pub const SERVE: &str = "\
EXAMPLES:
  scalelab serve                              # http://127.0.0.1:8080/
  scalelab serve --db postgres://scalelab@db.example/perf
  scalelab serve --listen 127.0.0.1:9000
  scalelab serve --listen localhost:8080 --allowed-host perf.example.internal

Pages: / (runs, filtered by workload, command text, host, tag, variant; check
two rows to compare them), /run/ID, /compare/A/B, /history/WORKLOAD (per
machine class; a command's: /history/cmd?p=cmd=...). No page writes; no
external script or font is loaded. Ctrl-C stops the server.

The dashboard has no login: anyone who reaches its address reads every run.
It answers only requests whose Host is the address it listens on, localhost
(on loopback), the --listen name or an --allowed-host (others get 421), and
drops a client idle or slow past --timeout; past --max-connections it closes
the connection idle longest.";

/// `scalelab report --help`.
pub const REPORT: &str = "\
EXAMPLES:
  scalelab report last -o run.html
  scalelab report last~1 last -o compare.html --title 'stock vs patched'
  scalelab report --bisect 1 -o bisect.html   # a bisection's commits";

/// `scalelab completions --help`.
pub const COMPLETIONS: &str = "\
EXAMPLES:
  scalelab completions bash > /etc/bash_completion.d/scalelab
  scalelab completions zsh > ~/.zfunc/_scalelab
  scalelab completions fish > ~/.config/fish/completions/scalelab.fish
  scalelab completions man > scalelab.1 ; man -l scalelab.1
  scalelab completions man --dir /usr/local/share/man/man1   # every page";

/// `scalelab compare --help`.
pub const COMPARE: &str = "\
EXAMPLES:
  scalelab run page_fault --runs 10 --variant stock
  scalelab run page_fault --runs 10 --variant patched   # patched kernel
  scalelab compare last~1 last                # A = baseline, B = candidate
  scalelab compare 12 15 --threshold 2% --alpha 0.01
  scalelab compare stock.json last --json     # exported runs work too
  scalelab compare last~1 last --metric latency   # a figure run --metric read
  scalelab compare last~1 last || echo regression   # a CI gate

A verdict is REGRESSED or IMPROVED only when p < alpha and the whole 95%
interval of the change lies beyond ±threshold; NO CHANGE when it lies within;
otherwise INCONCLUSIVE, with the runs per side that would decide. Runs of
different workloads, parameters or task counts are refused unless --force;
two `run --cmd` runs may differ in their command lines, which is what they
compare.

EXIT STATUS:
  0    no point REGRESSED
  1    some point REGRESSED
  2    a usage or runtime error (also: runs that measure different things)";

/// `scalelab ab --help`.
pub const AB: &str = "\
EXAMPLES:
  scalelab ab --a './old-build/bench' --b './new-build/bench' --tasks 1
  scalelab ab --a 'make -j{n}' --b 'CC=clang make -j{n}' \\
      --prepare 'make clean' --tasks 2,4
  scalelab ab --a 'gzip -c big > /dev/null' --b 'zstd -c big > /dev/null' \\
      --runs 20 --json
  scalelab ab --a ./old --b ./new --tasks 1 --max-runs 200   # until ±1% shows
  scalelab ab --a './bench' --b './bench --fast' --ops-regex 'ops: ([0-9]+)'
  read a b < <(scalelab ab --a ./old --b ./new -q)   # -q: the two run ids

Each pair's order (AB or BA) is drawn at random (seed printed, stored as the
tag ab_seed; --seed repeats an order), so drift in the machine lands on both
sides alike, and each pair's change B/A is judged (Wilcoxon signed-rank):
what slows both trials of a pair cancels. `compare` of the two stored runs
judges them the same way (--unpaired: as two independent samples).

EXIT STATUS:
  0    B did not REGRESS at any point
  1    B REGRESSED at some point
  2    a usage or runtime error, or every trial of a side failed
  130  interrupted by Ctrl-C or SIGTERM (the finished trials are stored)";

/// `scalelab bisect --help`.
pub const BISECT: &str = "\
EXAMPLES:
  scalelab bisect --repo ~/src/app --good v1.2 --bad v1.3 \\
      --build 'make -j8' --cmd './bench --threads {n}' --tasks 8
  scalelab bisect --repo . --good HEAD~64 --bad HEAD --build 'make' \\
      --cmd './loop' --tasks 1 --threshold 2% --max-runs 60
  scalelab bisect --resume              # after Ctrl-C or a crash
  scalelab bisect show 3 --json         # a bisection's steps and answer
  scalelab report --bisect 3 -o bisect.html
  scalelab bisect --repo ~/linux --good v6.8 --bad v6.9 --no-build \\
      page_fault --tasks 1,2            # then, after each reboot:
  scalelab bisect next ; scalelab bisect mark   # (mark --skip: no boot)

The good and bad ends are built once (worktrees beside the database) and
measured interleaved; the bisection goes on only if bad REGRESSED against good
at some N. Each step builds a commit and measures it in groups of three
(good, commit, bad) in random order: good when NO CHANGE against the good end
(or IMPROVED against the bad end, INCONCLUSIVE against the good one), bad
when REGRESSED against the good end and not REGRESSED or IMPROVED against
the bad one; more groups up to --max-runs while undecided, then skipped (so
is a commit that does not build). Each trial counts its CPU time (--metric
cpu), which other work competing for the CPUs does not inflate; --metric
throughput for wall time. Every run is stored, tagged bisect=ID and
commit=HASH.

EXIT STATUS:
  0    the first bad commit was found
  1    the range is not a regression (bad is not REGRESSED against good)
  2    a usage or runtime error; also only skipped commits left
  130  interrupted by Ctrl-C or SIGTERM (`bisect --resume` continues)";

/// `scalelab model --help`.
pub const MODEL: &str = "\
EXAMPLES:
  scalelab run page_fault --tasks 1,2,4,8,16 --runs 5
  scalelab model last
  scalelab model last --predict 32,64
  scalelab model --csv measurements.csv --json   # N,throughput rows";

/// `scalelab locks --help`.
pub const LOCKS: &str = "\
EXAMPLES:
  scalelab run create_unlink -p shared=true --tasks 1,2 --locks
  scalelab locks last               # what grows with N: lock wait per op
  scalelab locks last --at 2 --kernel --top 20   # lock_stat-like, at N=2
  scalelab locks last --at 2 --user   # futex waits by address and call site
  scalelab locks last --json";

/// `scalelab explain --help`.
pub const EXPLAIN: &str = "\
EXAMPLES:
  scalelab run futex_mutex -p shared=true --tasks 1,2 --runs 3 --explain
  scalelab explain last             # the answer, time per op, growth by cause
  scalelab explain 12 --json        # the same figures as JSON
  scalelab run create_unlink -p shared=true --tasks 1,2,3,4 --explain
  scalelab explain last             # with 4 N: the USL's σ and κ beside it";

/// `scalelab profile --help`.
pub const PROFILE: &str = "\
EXAMPLES:
  scalelab run page_fault --tasks 1,2 --profile
  scalelab profile last             # what grows with N: cost per op vs N=1
  scalelab profile last --at 2 --top 25   # the top functions at N=2
  scalelab profile last --diff 12   # against run 12, function by function
  scalelab profile last --at 2 --flamegraph fg.svg
  scalelab profile last --diff 12 --flamegraph diff.svg
  scalelab profile --perf-data perf.data --kallsyms kallsyms   # any file";
