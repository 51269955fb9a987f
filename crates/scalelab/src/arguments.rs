//! Command-line arguments (clap derive). Converted at once into the engine's domain types;
//! nothing below `main` sees clap.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use lab::{Field, LockRequest, parse_duration};
use model::record::{Membind, Nanos, Pin};
use model::task_spec::TaskSpec;

use crate::help_text;
use crate::output::Chosen;

#[derive(Debug, Parser)]
#[command(name = "scalelab", version, about = "A Linux scalability lab: sweep a workload over task counts, find what stops it scaling, compare, track.", after_help = help_text::TOP, disable_help_subcommand = true)]
pub struct Cli {
    /// The results database: a SQLite file, or a PostgreSQL URL (postgres://USER@HOST/DB, a
    /// team's shared store; its password from the URL, PGPASSWORD or ~/.pgpass, never shown)
    /// [default: $XDG_DATA_HOME/scalelab/scalelab.db].
    #[arg(
        long,
        global = true,
        env = "SCALELAB_DB",
        hide_env_values = true,
        value_name = "PATH|URL"
    )]
    pub db: Option<PathBuf>,
    /// Colour verdicts, warnings and errors: auto (on a terminal, unless NO_COLOR is set to
    /// anything but empty, or TERM=dumb), always, never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Show every table column. Without it, tables fit COLUMNS when it is set, else the
    /// terminal's width (a pipe or a file gets every column), leaving out the least needed
    /// columns and saying which.
    #[arg(long, global = true)]
    pub wide: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Built-in workloads: their op, parameters and the kernel path they stress.
    List {
        #[command(flatten)]
        output: Output,
    },
    /// Sweep a workload over task counts, repeated, and store every trial.
    #[command(after_help = help_text::RUN)]
    Run(RunArgs),
    /// Stored runs, oldest first.
    #[command(after_help = help_text::LS)]
    Ls(LsArgs),
    /// One run's results: throughput, scaling and accounting per N.
    #[command(after_help = help_text::SHOW)]
    Show {
        /// Run id, `last`, `last~K`, or an exported JSON file.
        run: String,
        #[command(flatten)]
        output: DocOutput,
    },
    /// Compare two runs N by N: a verdict with its interval per point, the whole curve, and
    /// everything that weakens the answer. Exit 1 when any point REGRESSED.
    #[command(after_help = help_text::COMPARE)]
    Compare(CompareArgs),
    /// Measure two commands in interleaved, randomly ordered A/B pairs, store both runs
    /// (variants a and b) and compare them. Exit 1 when B REGRESSED at any point.
    #[command(after_help = help_text::AB)]
    Ab(AbArgs),
    /// Find the commit that made a command (or a workload) slower: build and measure commits
    /// of a git range, each interleaved against the good and the bad end, with a statistical
    /// verdict at every step. Exit 0 when found, 1 when the range is not a regression.
    #[command(after_help = help_text::BISECT)]
    Bisect(BisectArgs),
    /// Fit the Universal Scalability Law to a run (every trial) or to N,throughput rows, and
    /// predict throughput at task counts not measured.
    #[command(after_help = help_text::MODEL)]
    Model(ModelArgs),
    /// Write a run as JSON (lossless, re-importable), CSV (one row per trial) or Markdown (the
    /// tables of `show`) to stdout.
    #[command(after_help = help_text::EXPORT)]
    Export {
        /// Run id, `last`, `last~K`, or an exported JSON file.
        run: String,
        /// json: the whole run, for `scalelab import`; csv: one row per trial.
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
    },
    /// Store a run exported from another machine or database.
    #[command(after_help = help_text::IMPORT)]
    Import {
        /// Runs written by `scalelab export` (JSON), one per file, each stored in its own
        /// transaction.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// What on this machine will make numbers noisy, with a fix for each.
    Doctor {
        #[command(flatten)]
        output: Output,
    },
    /// One metric at one N across every stored run of a workload, with change points.
    #[command(after_help = help_text::HISTORY)]
    History(HistoryArgs),
    /// Lock contention of a run traced with --locks: what grows with N, or the table at one N.
    #[command(after_help = help_text::LOCKS)]
    Locks(LocksArgs),
    /// Why a run stops scaling: its cost per op accounted per N and the growth attributed to
    /// named causes (locks, blocking, functions), with what is unexplained.
    #[command(after_help = help_text::EXPLAIN)]
    Explain(ExplainArgs),
    /// One self-contained HTML page: runs, plots, comparisons, history.
    #[command(after_help = help_text::REPORT)]
    Report(ReportArgs),
    /// CPU profile of a run recorded with --profile: what grows with N, the top functions at
    /// one N, or the diff of two runs; flame graphs.
    #[command(after_help = help_text::PROFILE)]
    Profile(ProfileArgs),
    /// Shell completions (bash, zsh, fish, elvish, powershell) or the man page, on stdout.
    #[command(after_help = help_text::COMPLETIONS)]
    Completions {
        /// The shell to complete in, or `man` for the manual page (roff).
        #[arg(value_enum)]
        target: CompletionTarget,
        /// With `man`: write a page per command (scalelab.1, scalelab-run.1, …) into DIR
        /// instead of the top page on stdout.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Copy runs to another store (a team's PostgreSQL, or another SQLite file), idempotently:
    /// a run the target already has (same UUID) is never copied twice.
    #[command(after_help = help_text::PUSH)]
    Push(PushArgs),
    /// A read-only dashboard of the store in the browser: runs, one run, two compared, history
    /// per workload and machine class.
    #[command(after_help = help_text::SERVE)]
    Serve(ServeArgs),
    /// Queue a run or an A/B for the lab's machines of a class, through a team's PostgreSQL
    /// store; an agent of that class runs it (`scalelab agent`) and stores its runs there.
    #[command(after_help = help_text::SUBMIT)]
    Submit(SubmitArgs),
    /// The lab's job queue: each job (queued, running where and since, done with its runs,
    /// failed and why) and each agent; cancel a job, or wait for one to end.
    #[command(after_help = help_text::QUEUE)]
    Queue(QueueArgs),
    /// Run the lab's queued jobs on this machine, one at a time, until stopped: the jobs its
    /// class matches, each as `scalelab run`/`ab` would, on a quiet machine.
    #[command(after_help = help_text::AGENT)]
    Agent(AgentArgs),
    /// Print this help, or the help of the given subcommand (as `scalelab COMMAND --help`).
    Help {
        /// The subcommand (and its subcommands) to explain.
        command: Vec<String>,
    },
    /// (internal) Run one trial: spec on stdin, measurement on stdout.
    #[command(name = "__trial", hide = true)]
    Trial,
    /// (internal) Wait for the scalelab OWNER to end, then kill what it left running.
    #[command(name = "__guard", hide = true)]
    Guard { owner: String },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
    Markdown,
}

/// `--color`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

impl From<ColorArg> for present::ColorChoice {
    fn from(arg: ColorArg) -> Self {
        match arg {
            ColorArg::Auto => present::ColorChoice::Auto,
            ColorArg::Always => present::ColorChoice::Always,
            ColorArg::Never => present::ColorChoice::Never,
        }
    }
}

/// `--format` of a command whose results read as tables or as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TextFormat {
    Text,
    Json,
}

/// `--format` of a command whose results also read well as Markdown (a report of several
/// tables and sentences).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DocFormat {
    Text,
    Json,
    Markdown,
}

/// `--format` of a command whose result is one table (CSV too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    Text,
    Json,
    Markdown,
    Csv,
}

impl From<TextFormat> for Chosen {
    fn from(f: TextFormat) -> Chosen {
        match f {
            TextFormat::Text => Chosen::Printed(present::Format::Text),
            TextFormat::Json => Chosen::Json,
        }
    }
}

impl From<DocFormat> for Chosen {
    fn from(f: DocFormat) -> Chosen {
        match f {
            DocFormat::Text => Chosen::Printed(present::Format::Text),
            DocFormat::Json => Chosen::Json,
            DocFormat::Markdown => Chosen::Printed(present::Format::Markdown),
        }
    }
}

impl From<TableFormat> for Chosen {
    fn from(f: TableFormat) -> Chosen {
        match f {
            TableFormat::Text => Chosen::Printed(present::Format::Text),
            TableFormat::Json => Chosen::Json,
            TableFormat::Markdown => Chosen::Printed(present::Format::Markdown),
            TableFormat::Csv => Chosen::Printed(present::Format::Csv),
        }
    }
}

/// The one output switch of every command that prints results: `--format` with the formats
/// that fit the command (`$format`), and `--json` as its alias. One struct per set of formats,
/// so that each command's `--help` lists only its own.
macro_rules! output_switch {
    ($(#[$doc:meta])* $name:ident, $format:ident, $help:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Args)]
        pub struct $name {
            #[doc = $help]
            #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
            pub format: Option<$format>,
            /// Print the results as JSON on stdout (the same as --format json).
            #[arg(long)]
            pub json: bool,
        }

        impl $name {
            /// The form chosen: `--json`, else `--format`, else text.
            pub fn chosen(&self) -> Chosen {
                if self.json {
                    Chosen::Json
                } else {
                    self.format
                        .map_or(Chosen::Printed(present::Format::Text), Chosen::from)
                }
            }
        }
    };
}

output_switch!(
    /// `--format text|json`.
    Output,
    TextFormat,
    "text (tables, the default) or json (the figures as JSON on stdout)."
);

impl Output {
    /// Whether the results are printed as JSON (the only other form is text).
    pub fn json(&self) -> bool {
        self.chosen() == Chosen::Json
    }
}

output_switch!(
    /// `--format text|json|markdown`.
    DocOutput,
    DocFormat,
    "text (tables, the default), json (the figures as JSON on stdout) or markdown (to paste \
     into a pull request, an issue or a mail)."
);

output_switch!(
    /// `--format text|json|markdown|csv`.
    TableOutput,
    TableFormat,
    "text (tables, the default), json (the figures as JSON on stdout), markdown (to paste \
     into a pull request, an issue or a mail) or csv (the table, for a spreadsheet or a \
     script)."
);

/// What `scalelab completions` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionTarget {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
    Man,
}

/// `--server-cpus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServerCpusArg {
    Same,
    Rest,
    All,
}

/// `--attach SPEC`.
fn parse_attach(text: &str) -> Result<lab::runner::AttachSpec, String> {
    text.parse()
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Threads,
    Processes,
}

// One of WORKLOAD or --cmd, and the usage line says so.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["workload", "cmd"])))]
// --profile-trials needs a profile: --profile, or --explain which records one.
#[command(group(ArgGroup::new("profiling").multiple(true).args(["profile", "explain"])))]
pub struct RunArgs {
    /// A built-in workload (see `scalelab list`); or give --cmd instead.
    pub workload: Option<String>,
    /// Measure an external command instead; `{n}` is replaced by the point's task count and the
    /// command runs with its CPU affinity limited to N CPUs.
    #[arg(long, value_name = "CMD")]
    pub cmd: Option<String>,
    /// Run before each command trial, not timed.
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub prepare: Option<String>,
    /// Run the command (with --prepare, its steps and --cleanup) K times at the largest N
    /// before the first trial, unmeasured and untraced: what a cold cache, a new file system
    /// or a first compile costs stays out of the trials. A failed warm-up run is a warning.
    #[arg(long, value_name = "K", requires = "cmd", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup_runs: u32,
    /// Run after each command trial (also after a failed one), not timed; it has a --timeout of
    /// its own, and after a Ctrl-C it still runs unless a second Ctrl-C ends it.
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub cleanup: Option<String>,
    /// A server the command drives, part of the system under test: started by `sh -c` before
    /// the first trial (before each point when CMD holds {n}), stopped after the last (SIGTERM,
    /// then SIGKILL, with everything it started); its output is kept out of the terminal. Its
    /// threads are traced with the command's, and a worker's wait it ended is followed into
    /// what it did. Repeatable.
    #[arg(long = "server", value_name = "CMD", requires = "cmd")]
    pub servers: Vec<String>,
    /// Run after the servers start, every 200 ms until it exits 0 (at most 60 s), before any
    /// trial: e.g. `pg_isready -h /tmp/pg`.
    #[arg(long, value_name = "CMD", requires = "servers")]
    pub ready: Option<String>,
    /// A running process that is part of the system under test, traced as a server: pid:PID,
    /// comm:NAME (every process of that name) or cgroup:PATH (under /sys/fs/cgroup, with the
    /// cgroups below); found again at each trial, and what it starts is followed. Repeatable.
    #[arg(long, value_name = "SPEC", requires = "cmd", value_parser = parse_attach)]
    pub attach: Vec<lab::runner::AttachSpec>,
    /// Where the servers run: on the command's N CPUs (same), on the other CPUs (rest; all of
    /// them when N takes every one) or on every CPU (all). Attached processes stay where they
    /// are.
    #[arg(long, value_enum, requires = "servers", default_value = "same")]
    pub server_cpus: ServerCpusArg,
    /// A further timed step after --cmd, accounted separately; repeatable, run in order.
    #[arg(long = "step", value_name = "NAME=CMD", requires = "cmd", value_parser = parse_pair)]
    pub steps: Vec<(String, String)>,
    /// Ops per command trial (a known amount of work) [default: 1 completion].
    #[arg(long, value_name = "N", requires = "cmd", conflicts_with = "ops_regex")]
    pub ops: Option<u64>,
    /// Read the op count from the command's stdout: the first capture group of this regex in
    /// the first line it matches (it matches within one line).
    #[arg(long, value_name = "RE", requires = "cmd")]
    pub ops_regex: Option<String>,
    #[command(flatten)]
    pub metric: MetricArgs,
    /// Kill a command trial still running after this long and record it as failed (prepare
    /// and the timed steps share it; cleanup has its own).
    #[arg(long, value_name = "DURATION", requires = "cmd", value_parser = parse_duration)]
    pub timeout: Option<Nanos>,
    /// Workload parameter, repeatable: -p size=64M -p lines=8.
    #[arg(short = 'p', long = "param", value_name = "KEY=VAL", value_parser = parse_pair)]
    pub params: Vec<(String, String)>,
    /// Task counts: 1,2,4 | 1..8 | 1..16:2 | pow2 | all [default: pow2 up to the usable CPUs,
    /// plus the topology's boundaries: cores per L3, per node, per socket, all cores, all CPUs].
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub tasks: Option<TaskSpec>,
    /// Tasks are threads of one process or separate processes [default: threads]
    /// (built-in workloads).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Trials per point, each in a fresh child process.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Measured time per trial (500ms, 5s, 1m) [default: 5s] (built-in workloads; a command
    /// trial lasts as long as the command).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub duration: Option<Nanos>,
    /// Unmeasured time per trial before the window opens [default: 1s] (built-in workloads).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub warmup: Option<Nanos>,
    /// CPU placement: cores, compact, spread-nodes, none, or a CPU list such as 0,2,4-7
    /// [default: cores] (built-in workloads; a command gets the first N CPUs).
    ///
    /// Task i runs on the i-th CPU of the strategy's order. Only CPUs this process may use
    /// (online, in its cgroup cpuset, in its affinity mask) are candidates; with more tasks than
    /// candidates a strategy pins nobody and the scheduler places them (a CPU list wraps
    /// instead). `scalelab doctor` prints the topology the strategies see.
    ///
    ///   cores         one task per physical core, spread over sockets, NUMA nodes and L3
    ///                 domains, SMT siblings last. Use it to measure how the code scales
    ///                 over cores (likwid-pin's scatter over physical cores).
    ///   compact       fill a core's SMT siblings, then its L3 domain, then its NUMA node,
    ///                 then the next: sharing costs (SMT, L3, memory bandwidth) show at the
    ///                 smallest N. Use it to find what a task shares with its neighbours.
    ///   spread-nodes  round-robin over NUMA nodes, physical cores first in each. Use it when
    ///                 memory bandwidth or remote-node traffic is the question.
    ///   none          no pinning: the scheduler decides (what production usually does).
    ///   0,2,4-7       exactly these CPUs, in this order (likwid-pin -c style).
    ///
    /// Memory: each task first touches its own memory after it is pinned, so under the kernel's
    /// default policy its pages come from its own node. (`auto` and `core`, the names before
    /// these strategies, mean `cores`.)
    #[arg(long, value_name = "STRATEGY|CPUS", value_parser = parse_pin, verbatim_doc_comment)]
    pub pin: Option<Pin>,
    /// Where the tasks' memory comes from: first-touch, node or interleave [default:
    /// first-touch] (built-in workloads; set by each task after it is pinned, before its
    /// workload touches memory).
    ///
    ///   first-touch  the kernel's default: a page comes from the node of the CPU that first
    ///                touches it, so a pinned task's own memory is on its own node.
    ///   node         each task's pages only from its CPU's node (MPOL_BIND): as first-touch,
    ///                but a full node fails over to swapping, not to a remote node. Needs
    ///                pinned tasks; a task left unpinned past the CPUs keeps the default.
    ///   interleave   every task's pages round-robin over the nodes of the CPUs scalelab
    ///                may use (MPOL_INTERLEAVE): memory bandwidth of every node, and a remote
    ///                access on most pages; shows what locality is worth.
    #[arg(long, value_name = "POLICY", value_parser = parse_membind, verbatim_doc_comment)]
    pub membind: Option<Membind>,
    /// Where file-based workloads create their files: a fresh directory per trial, removed after it [default: the system temporary directory] (built-in workloads).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Do not open hardware counters (cycles, instructions) (built-in workloads).
    #[arg(long)]
    pub no_counters: bool,
    /// Trace lock contention in every trial: kernel locks (lock:contention_*) and user locks
    /// (futex waits); `--locks=kernel` or `--locks=user` for one side. Every wait is timed and
    /// summed per lock, with the call chains of a sample (see --tracer). See `scalelab locks`.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "all", value_name = "WHICH")]
    pub locks: Option<LocksArg>,
    /// Bytes of user stack --locks copies with each futex wait to unwind its call chain
    /// through code built without frame pointers (a multiple of 8, at most 65528), with
    /// `--tracer perf`; the kernel tracer copies 16384 with each sampled wait.
    #[arg(long, value_name = "BYTES", default_value_t = LockRequest::DEFAULT_STACK_SIZE,
          value_parser = LockRequest::parse_stack_size, requires = "locks")]
    pub stack_size: u32,
    /// What the kernel tracer times as a futex wait: `calls`, every call that waits, entry to
    /// exit (every contended call counted, but every system call on the machine takes the
    /// kernel's slow path meanwhile: sysbench with a hot mutex, 1.9M sched_yield calls a
    /// second, kept 0.63 of its throughput); `sleeps`, each sleep inside one, blocking switch
    /// to switch back in (cheap; a call that returns without sleeping is not seen). `--tracer
    /// perf` times every call [default: calls with --locks, sleeps with --explain]
    #[arg(long, value_enum, value_name = "WHAT")]
    pub futex_waits: Option<FutexWaitsArg>,
    /// Record a CPU profile (perf record -g) of the first --profile-trials trials of each point;
    /// the perf.data files are kept beside the database. See `scalelab profile`.
    #[arg(long)]
    pub profile: bool,
    /// How many trials of each point --profile (or --explain) records [default: 1; with
    /// --explain every trial of a built-in workload, so that a function's growth is judged
    /// trial by trial].
    #[arg(long, value_name = "K", requires = "profiling")]
    pub profile_trials: Option<u32>,
    /// Samples a second of --profile (or --explain), up to kernel.perf_event_max_sample_rate
    /// [default: 4000 for --profile of a built-in workload; 1000 under --explain, where each sample
    /// that lands in a lock's hold makes the other tasks wait (4000 made futex_mutex block 6
    /// times as often), and for a command, whose samples each copy 16 KiB of its stack to be
    /// unwound; a quarter of that limit if lower]. Fewer cost the program less, perturb it less and
    /// leave each share less precise.
    #[arg(long, value_name = "HZ", requires = "profiling")]
    pub profile_frequency: Option<u32>,
    /// Where --profile (or --explain) samples: `tasks` follows the program's tasks (perf record
    /// -- program), stopped and restarted at each of their context switches; `every-cpu`
    /// samples every CPU (perf record -a, idle left out), keeping the program's processes when
    /// reading, other processes' samples written to the file too (needs root or
    /// perf_event_paranoid <= 0); `auto` samples every CPU at 241 Hz at each N of a built-in
    /// whose untraced reference trial switched 5,000 times a second or more per task, where
    /// the sampled event is cpu-clock (no PMU) and perf may, else follows the tasks
    /// (2-vCPU VM, fsync_write on its disk with --explain: 0.86 of untraced throughput
    /// following its tasks at 4 kHz, 0.98 on every CPU at 250 Hz)
    #[arg(
        long,
        value_enum,
        value_name = "SCOPE",
        default_value = "auto",
        requires = "profiling"
    )]
    pub profile_scope: ProfileScopeArg,
    /// Record the evidence `scalelab explain` reads (= --profile --locks --offcpu), then print
    /// the explanation after the run. With traces, one extra untraced trial per N measures
    /// what tracing costs (it is not one of the run's trials).
    #[arg(long)]
    pub explain: bool,
    /// Trace when the tasks block (the scheduler's switch and wake-up tracepoints, with kernel
    /// and user call chains; see --tracer) in every trial: blocked time by cause
    /// (futex, rwsem, mutex, fsync, io, pipe, sleep) and by what ended it; for a command, every
    /// thread's life (workers and supervisors apart). Needs root (and BTF, or tracefs for the
    /// perf tracer).
    #[arg(long)]
    pub offcpu: bool,
    /// How --offcpu, --locks and --explain trace: `kernel` sums every thread's time and
    /// every lock's waits in the kernel (BPF) and records the call chains of a sample (each
    /// site's and caller's time then carries its sampling error); `perf` records every
    /// switch, wake-up and wait through perf's ring buffers (every chain, at several times the
    /// cost where tasks block or contend often). `kernel` falls back to `perf`, with a note,
    /// where the kernel or this build cannot.
    #[arg(long, alias = "offcpu-tracer", value_enum, value_name = "TRACER", default_value_t = TracerArg::Kernel)]
    pub tracer: TracerArg,
    /// With `--tracer kernel`: record the call chains of 1 in K blocking switches and 1 in K
    /// lock waits, K fixed (1: every one, as the perf tracer does, at its cost where tasks
    /// block often). Without it K is set per CPU from the rate, about 1,000 chains a second on
    /// the whole machine. Every episode's time is summed either way
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub chain_every: Option<u32>,
    /// Name the side of a comparison this run belongs to (stock, patched…).
    #[arg(long)]
    pub variant: Option<String>,
    /// Label the run, repeatable: --tag kernel=6.8 --tag commit=abc123.
    #[arg(long = "tag", value_name = "KEY=VAL", value_parser = parse_pair)]
    pub tags: Vec<(String, String)>,
    /// A free-text name for the run.
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: Output,
    /// No progress, no tables: only the run id on stdout, and errors (the run is still stored).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only runs of this workload (`cmd` for external commands).
    #[arg(long)]
    pub workload: Option<String>,
    /// Only runs with this tag, repeatable.
    #[arg(long = "tag", value_name = "KEY=VAL", value_parser = parse_pair)]
    pub tags: Vec<(String, String)>,
    /// Only runs of this variant (`run --variant`; `a` and `b` for `ab`).
    #[arg(long)]
    pub variant: Option<String>,
    #[command(flatten)]
    pub output: TableOutput,
    /// Only runs of external commands whose command line contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub cmd: Option<String>,
    /// Only runs measured on this host (its name, as `ls --json` shows in `host`).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Only runs measured on this machine class (as `ls --json` shows in `host_class`).
    #[arg(long, value_name = "CLASS")]
    pub host_class: Option<String>,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The store to copy to: a PostgreSQL URL (postgres://USER@HOST/DB) or a SQLite file.
    #[arg(long, value_name = "URL|PATH")]
    pub to: PathBuf,
    /// Only runs of this workload (`cmd` for external commands).
    #[arg(long)]
    pub workload: Option<String>,
    /// Only runs with this tag, repeatable.
    #[arg(long = "tag", value_name = "KEY=VAL", value_parser = parse_pair)]
    pub tags: Vec<(String, String)>,
    /// Only runs of this variant.
    #[arg(long)]
    pub variant: Option<String>,
    /// Also store each run's perf.data files and kallsyms snapshot in the target, so that
    /// other hosts can read its profiles (also for runs pushed before without them).
    #[arg(long)]
    pub with_profiles: bool,
    #[command(flatten)]
    pub output: Output,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").args(["class", "host"])))]
pub struct SubmitArgs {
    /// The machines that may run it: `any`, or terms such as `cpus>=32,arch=x86_64`,
    /// `mem>=64`, `cpu~EPYC`, `hypervisor=bare` (all must hold) [default: any].
    #[arg(long, value_name = "CLASS", value_parser = parse_class)]
    pub class: Option<model::env::ClassFilter>,
    /// Only the agent of this host.
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Queue it again at every occurrence of this schedule, UTC: `mon 03:00`, `mon,thu 21:30`,
    /// `daily 03:00`. Any agent queues an occurrence once it is due (once, however many see it).
    #[arg(long, value_name = "WHEN", value_parser = parse_every)]
    pub every: Option<model::schedule::Every>,
    /// After the job, run `history --check` on its series (the workload and parameters, or the
    /// command, on the agent's host): a new change point marks the job REGRESSED.
    #[arg(long)]
    pub check_history: bool,
    /// Attempts before a job whose agents keep dying (killed, cut off) is failed.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub attempts: u32,
    /// Kill the job and fail it "timed out" once it has run this long [default: from its plan:
    /// three times its trials' warm-ups and windows, plus 10 minutes; a command's job: the
    /// agent's --max-job-time]. Refused when its plan cannot fit.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Nanos>,
    #[command(flatten)]
    pub output: Output,
    /// The job, as typed after `scalelab`: `run …` or `ab …` (without --db: the agent stores
    /// its runs in the queue's store).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "JOB"
    )]
    pub job: Vec<String>,
}

#[derive(Debug, Args)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub action: Option<QueueAction>,
    /// Show only the newest N jobs.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    #[command(flatten)]
    pub output: Output,
}

#[derive(Debug, Subcommand)]
pub enum QueueAction {
    /// Cancel a job that has not ended; a running job's agent stops it at its next heartbeat
    /// (the run keeps its finished trials, marked interrupted).
    Cancel {
        /// The job's id.
        id: i64,
    },
    /// Stop a recurring job (`submit --every`): no further occurrence is queued; the jobs it
    /// queued stay.
    Unschedule {
        /// The schedule's id (`scalelab queue` lists them).
        id: i64,
    },
    /// Wait until a job ends. Exit 0 when it is done, 1 when done and REGRESSED (an A/B), 2
    /// when it failed, was cancelled, or the timeout came first.
    Wait {
        /// The job's id.
        id: i64,
        /// Give up after this long [default: wait for ever].
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        timeout: Option<Nanos>,
    },
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Also run jobs that carry a shell command (`run --cmd`, `ab`) when every command is one
    /// program inside DIR (its absolute path, no `..`, every link resolved inside DIR) and
    /// its arguments, with no shell syntax; repeatable. A DIR holding a shell or an
    /// interpreter is refused (it would allow any command) unless --allow-any-cmd is given.
    /// Without it (or --allow-any-cmd) only built-in workloads run.
    #[arg(long = "allow-cmd", value_name = "DIR")]
    pub allow_cmd: Vec<String>,
    /// Run jobs carrying any command. Whoever can insert into the queue can then run any
    /// command as this agent's user (see SECURITY.md).
    #[arg(long)]
    pub allow_any_cmd: bool,
    /// The longest a job may run here: past it (or past the job's own `submit --timeout`, or
    /// the time its plan derives), its processes are killed, its partial run is kept as
    /// incomplete and the job fails "timed out". `submit` refuses a plan longer than every
    /// matching agent's.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_duration)]
    pub max_job_time: Nanos,
    /// A running job's lease, renewed every quarter of it: a job whose agent misses it is
    /// taken back and retried (an agent whose connection ends loses its job at once).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub lease: Nanos,
    /// The longest pause between two looks at a queue with nothing for this machine.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub poll: Nanos,
    /// How long a job waits for a busy machine (tasks runnable besides the agent, or doctor's
    /// memory check) to quieten before it is given back to the queue.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub busy_wait: Nanos,
    /// Do not wait for the machine to be quiet: measure whatever else runs (the agents' table
    /// in `scalelab queue` says so).
    #[arg(long)]
    pub ignore_load: bool,
    /// Stop after this many jobs [default: run until stopped].
    #[arg(long, value_name = "N")]
    pub max_jobs: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on (ADDR:PORT, or HOST:PORT such as localhost:8080); another
    /// than loopback makes the store readable by whoever reaches it, unauthenticated.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Also answer requests whose Host is NAME (a name the dashboard is reached by, e.g.
    /// through a proxy), repeatable; others than the address it listens on, localhost and
    /// the --listen name get 421.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// The most connections open at once; past it the one idle longest is closed.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_connections: u64,
    /// How long a client may take to send a request's head, or stay idle between requests.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub timeout: model::record::Nanos,
}

// WORKLOAD, --cmd (or both), or --csv; the usage line says so.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").required(true).multiple(true).args(["workload", "csv", "cmd"])))]
pub struct HistoryArgs {
    /// The workload (`cmd` for external commands); its parameters with -p. Omit with --csv
    /// or --cmd.
    #[arg(conflicts_with = "csv")]
    pub workload: Option<String>,
    /// Follow the external command CMD, exactly as run (`scalelab ls --cmd TEXT` finds it);
    /// a command's series is its command line, so `history cmd` alone refuses when several
    /// commands are stored, listing them.
    #[arg(long, value_name = "CMD", conflicts_with = "csv")]
    pub cmd: Option<String>,
    /// Only runs with these parameters (the others at their defaults), repeatable.
    #[arg(short = 'p', long = "param", value_name = "KEY=VAL", value_parser = parse_pair, conflicts_with = "csv")]
    pub params: Vec<(String, String)>,
    /// Only runs of this variant.
    #[arg(long, conflicts_with = "csv")]
    pub variant: Option<String>,
    /// Only runs measured on this host (its name).
    #[arg(long, value_name = "NAME", conflicts_with = "csv")]
    pub host: Option<String>,
    /// One series per machine class (CPU model, CPUs, memory, hypervisor), never mixing a
    /// 2-CPU VM with a 48-core box; `--check` fails when any class's newest segment regressed.
    #[arg(long, conflicts_with = "csv")]
    pub host_class: bool,
    /// The task count to follow [default: the largest N of the newest run].
    #[arg(long, conflicts_with = "csv")]
    pub at: Option<u32>,
    /// throughput | ops_per_cpu_sec | ns_per_op | speedup | efficiency | cycles_per_op |
    /// instructions_per_op | cache_misses_per_op | cpu_pct, or the name of a figure the
    /// command printed (`run --metric NAME=…`; `metric.NAME` where it is also a built-in's
    /// name), followed as printed, in its own direction
    #[arg(long, value_name = "METRIC", default_value = "throughput")]
    pub metric: String,
    /// Exit 1 when the newest segment is a regression (for a weekly job or CI); exit 2, no
    /// verdict, while the series is shorter than two segments of --min-segment.
    #[arg(long)]
    pub check: bool,
    /// Significance a change point needs, in (0, 1).
    #[arg(long, default_value_t = 0.001, value_parser = parse_alpha)]
    pub max_p: f64,
    /// Fewest runs in a segment.
    #[arg(long, default_value_t = 3)]
    pub min_segment: usize,
    /// Read the series from a file instead: one value per line, or `label,value`; an optional header, `#` comments (as `model --csv`).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    #[command(flatten)]
    pub output: TableOutput,
}

/// The command's own figures (`--metric`): shared by `run`, `ab` and `bisect`.
#[derive(Debug, Args, Default)]
pub struct MetricArgs {
    /// A figure the command reports itself, read from each trial's output: NAME=REGEX (higher
    /// is better), NAME=higher:REGEX or NAME=lower:REGEX (a time, a latency); the regex's first
    /// capture group in the first line it matches, a number with an optional k/M/G suffix.
    /// Repeatable; the first (or --primary) is X(N) for S(N), compare, history, bisect and the
    /// model; a trial whose output has no such line fails, naming it
    #[arg(long = "metric", value_name = "NAME=REGEX", requires = "cmd")]
    pub metrics: Vec<String>,
    /// Which output --metric reads [default: stdout]
    #[arg(long, value_enum, value_name = "STREAM", requires = "metrics")]
    pub metric_from: Option<MetricFrom>,
    /// Which --metric is X(N) [default: the first]; `ops` keeps X(N) ops per second (--ops,
    /// --ops-regex) and shows the metrics beside it
    #[arg(long, value_name = "NAME", requires = "metrics")]
    pub primary: Option<String>,
}

/// Where `--metric` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetricFrom {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl MetricArgs {
    /// The metrics, the primary first, and whether X(N) stays ops per second (`--primary
    /// ops`); the error names the bad argument.
    pub fn specs(&self) -> Result<(Vec<model::record::MetricSpec>, bool), String> {
        let from = match self.metric_from {
            Some(MetricFrom::Stderr) => model::record::OutputStream::Stderr,
            _ => model::record::OutputStream::Stdout,
        };
        let mut specs = self
            .metrics
            .iter()
            .map(|m| model::record::MetricSpec::parse(m, from))
            .collect::<Result<Vec<_>, _>>()?;
        if self.primary.as_deref() == Some(model::record::PRIMARY_OPS) {
            return Ok((specs, true));
        }
        if let Some(primary) = &self.primary {
            let Some(i) = specs.iter().position(|m| &m.name == primary) else {
                let names: Vec<&str> = specs.iter().map(|m| m.name.as_str()).collect();
                return Err(format!(
                    "--primary {primary}: no --metric of that name (given: {})",
                    names.join(", ")
                ));
            };
            let p = specs.remove(i);
            specs.insert(0, p);
        }
        Ok((specs, false))
    }
}

/// How a comparison is judged: shared by `compare` and `ab`.
#[derive(Debug, Args)]
pub struct VerdictArgs {
    /// Smallest relative change that matters, as 1% or 0.01: a change is called only when its
    /// whole interval lies beyond ±threshold.
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = parse_threshold)]
    pub threshold: f64,
    /// Significance level of the test (Mann-Whitney U, or Wilcoxon signed-rank for the
    /// back-to-back pairs of `ab`), in (0, 1).
    #[arg(long, value_name = "A", default_value = "0.05", value_parser = parse_alpha)]
    pub alpha: f64,
    /// Treat the two runs of one `ab` experiment as independent samples instead of judging
    /// each back-to-back pair's change (pairing cancels what slows both trials of a pair).
    #[arg(long)]
    pub unpaired: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: run id, `last`, `last~K`, or an exported JSON file.
    pub run_a: String,
    /// The candidate, judged against A.
    pub run_b: String,
    #[command(flatten)]
    pub verdict: VerdictArgs,
    /// Compare even when the workloads, parameters or task counts differ (only N in both).
    #[arg(long)]
    pub force: bool,
    /// What each trial contributes: throughput (X(N): ops/s, or the run's primary `--metric`
    /// as a rate), ops_per_cpu_sec, max_rss (peak memory, KiB; lower is better), or the name
    /// of a figure the command printed (`run --metric NAME=…`, also `metric.NAME`), compared as
    /// printed in the direction its `--metric` gave (a latency: lower is better).
    #[arg(long, value_name = "NAME", default_value = "throughput")]
    pub metric: String,
    #[command(flatten)]
    pub output: TableOutput,
}

#[derive(Debug, Args)]
pub struct AbArgs {
    /// Command A, the baseline; `{n}` is replaced by the point's task count and the command
    /// runs with its CPU affinity limited to N CPUs, as with `run --cmd`.
    #[arg(long = "a", value_name = "CMD")]
    pub a: String,
    /// Command B, the candidate, run the same way.
    #[arg(long = "b", value_name = "CMD")]
    pub b: String,
    /// Pairs (trials per side) at each point. 10 by default: 10 pairs can reach p = 0.002,
    /// and the smallest detectable change is about 1.3 × the spread of the per-pair changes;
    /// the comparison prints how many pairs a smaller change needs (--max-runs adds them).
    #[arg(long, default_value_t = 10)]
    pub runs: u32,
    /// After --runs pairs, keep adding pairs (up to K per point) while some N cannot yet
    /// decide a change of ±threshold: the noise hides it (the comparison's "runs needed") or
    /// the interval is wider than 1.4 × threshold (a few wild pairs). Both read only the spread
    /// of the pairs' changes, never the verdict or where the interval lies, so looking again
    /// does not inflate false alarms. Default: no extension.
    #[arg(long, value_name = "K")]
    pub max_runs: Option<u32>,
    /// Task counts: 1,2,4 | 1..8 | 1..16:2 | pow2 | all [default: pow2 up to the online CPUs, plus that count].
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub tasks: Option<TaskSpec>,
    #[command(flatten)]
    pub verdict: VerdictArgs,
    /// Run before each trial of either side, not timed.
    #[arg(long, value_name = "CMD")]
    pub prepare: Option<String>,
    /// Run after each trial of either side (also after a failed one), not timed; it has a
    /// --timeout of its own, and after a Ctrl-C it still runs unless a second Ctrl-C ends it.
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Kill a trial still running after this long and record it as failed.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Nanos>,
    /// Ops per trial of either side (a known amount of work) [default: 1 completion].
    #[arg(long, value_name = "N", conflicts_with = "ops_regex")]
    pub ops: Option<u64>,
    /// Read each trial's op count from its command's stdout: the first capture group of this
    /// regex in the first line it matches; both sides use it.
    #[arg(long, value_name = "RE")]
    pub ops_regex: Option<String>,
    /// A figure both sides' commands report themselves (see `run --metric`); the first (or
    /// --primary) is what is compared.
    #[arg(long = "metric", value_name = "NAME=REGEX")]
    pub metrics: Vec<String>,
    /// Which output --metric reads [default: stdout]
    #[arg(long, value_enum, value_name = "STREAM", requires = "metrics")]
    pub metric_from: Option<MetricFrom>,
    /// Which --metric is compared [default: the first]
    #[arg(long, value_name = "NAME", requires = "metrics")]
    pub primary: Option<String>,
    /// Seed of the random pair order [default: from the clock]; stored as the tag ab_seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Label both runs, repeatable: --tag patch=v2.
    #[arg(long = "tag", value_name = "KEY=VAL", value_parser = parse_pair)]
    pub tags: Vec<(String, String)>,
    /// A free-text name for both runs.
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub output: TableOutput,
    /// No progress and no comparison: only the two run ids (A B) on one line of stdout, and
    /// errors (the exit status still tells).
    #[arg(long, short)]
    pub quiet: bool,
}

/// `scalelab bisect`: start one (the flags), resume one, or step one built by hand.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BisectArgs {
    #[command(subcommand)]
    pub action: Option<BisectAction>,
    /// The git repository to bisect. Its checkout is never touched: every commit is built in
    /// a worktree (`git worktree add --detach`) beside the database.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// A commit (hash, tag, branch) known to be fast: the older end of the range.
    #[arg(long, value_name = "REV")]
    pub good: Option<String>,
    /// A commit known to be slow, descended from --good: the newer end.
    #[arg(long, value_name = "REV")]
    pub bad: Option<String>,
    /// How to build a commit, run by `sh -c` in its worktree (a failed build skips the commit;
    /// its log is kept).
    #[arg(long, value_name = "CMD", conflicts_with = "no_build")]
    pub build: Option<String>,
    /// Build nothing: for kernels and what else needs a reboot or an install per commit.
    /// `scalelab bisect next` names the commit to boot, `scalelab bisect mark` measures what
    /// runs after the reboot and records its verdict.
    #[arg(long)]
    pub no_build: bool,
    /// A built-in workload (see `scalelab list`), with --no-build; or give --cmd instead.
    #[arg(conflicts_with = "cmd")]
    pub workload: Option<String>,
    /// The command to measure, run in each build's worktree (`./bench -t {n}`); `{n}` is the
    /// task count and the command runs with its CPU affinity limited to N CPUs.
    #[arg(long, value_name = "CMD")]
    pub cmd: Option<String>,
    /// Run before each trial of the command, not timed (in the build's worktree).
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub prepare: Option<String>,
    /// Run after each trial of the command, not timed (in the build's worktree).
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub cleanup: Option<String>,
    /// Ops per command trial [default: 1 completion].
    #[arg(long, value_name = "N", requires = "cmd", conflicts_with = "ops_regex")]
    pub ops: Option<u64>,
    /// Read each command trial's op count from its stdout: the first capture group of this
    /// regex in the first line it matches.
    #[arg(long, value_name = "RE", requires = "cmd")]
    pub ops_regex: Option<String>,
    /// Kill a command trial still running after this long and record it as failed.
    #[arg(long, value_name = "DURATION", requires = "cmd", value_parser = parse_duration)]
    pub timeout: Option<Nanos>,
    /// Workload parameter, repeatable: -p size=64M.
    #[arg(short = 'p', long = "param", value_name = "KEY=VAL", value_parser = parse_pair)]
    pub params: Vec<(String, String)>,
    /// Measured time per trial of a built-in workload [default: 5s].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub duration: Option<Nanos>,
    /// Task counts to measure at: 1 | 8 | 1,2 (required). Only those at which the bad end
    /// REGRESSED are bisected.
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub tasks: Option<TaskSpec>,
    /// What is compared per trial: cpu (ops per CPU-second of user + system time, the whole
    /// process tree's: time-sharing with other work on a busy machine does not move it, but a
    /// slowdown made of waiting — locks, I/O, sleep — does not show), throughput (ops per
    /// second of wall time: sees waiting too, and every other process competing for the CPUs),
    /// or a figure the command reports itself, NAME=REGEX as `run --metric` reads it (with
    /// --cmd; compared as throughput is).
    #[arg(long, value_name = "cpu|throughput|NAME=REGEX", default_value = "cpu", value_parser = parse_bisect_metric)]
    pub metric: BisectMetric,
    /// Groups (one trial of good, commit and bad, in random order) at each N before the
    /// first look.
    #[arg(long, default_value_t = 10)]
    pub runs: u32,
    /// Groups per N to grow to while a verdict is imprecise (its interval wider than 1.4 ×
    /// threshold, or noise hiding ±threshold); still undecided then, the commit is skipped.
    #[arg(long, value_name = "K", default_value_t = 40)]
    pub max_runs: u32,
    /// Smallest change that matters, as 1% or 0.01: good is NO CHANGE against the good end
    /// (interval within ±threshold), bad is REGRESSED against the good end and neither
    /// REGRESSED nor IMPROVED against the bad one.
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = parse_threshold)]
    pub threshold: f64,
    /// Significance level of the tests (Wilcoxon signed-rank on the back-to-back groups), in
    /// (0, 1).
    #[arg(long, value_name = "A", default_value = "0.05", value_parser = parse_alpha)]
    pub alpha: f64,
    /// Seed of the random orders [default: from the clock]; each step's order derives from it.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A build still running after this long fails, and its commit is skipped.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub build_timeout: Nanos,
    /// Label every run of the bisection, repeatable (they are also tagged bisect=ID and
    /// commit=HASH).
    #[arg(long = "tag", value_name = "KEY=VAL", value_parser = parse_pair)]
    pub tags: Vec<(String, String)>,
    /// Continue a bisection stopped by Ctrl-C or a crash [default: the newest unfinished one];
    /// decided steps are not measured again. Of a finished one, prints its answer.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "0",
          conflicts_with_all = ["repo", "good", "bad", "build", "no_build", "cmd", "workload"])]
    pub resume: Option<i64>,
    #[command(flatten)]
    pub output: Output,
    /// No progress: the answer only (errors and warnings still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
}

/// What `bisect --metric` compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BisectMetric {
    /// Ops per CPU-second (user + system time) of each trial.
    Cpu,
    /// Ops per second of each trial's wall time.
    Throughput,
    /// A figure the command reports itself.
    Reported(model::record::MetricSpec),
}

fn parse_bisect_metric(text: &str) -> Result<BisectMetric, String> {
    match text {
        "cpu" => Ok(BisectMetric::Cpu),
        "throughput" => Ok(BisectMetric::Throughput),
        _ if text.contains('=') => {
            model::record::MetricSpec::parse(text, model::record::OutputStream::Stdout)
                .map(BisectMetric::Reported)
        }
        _ => Err(format!(
            "`{text}`: one of cpu, throughput, or NAME=REGEX (a figure the command prints)"
        )),
    }
}

#[derive(Debug, Subcommand)]
pub enum BisectAction {
    /// --no-build: the commit to boot (or install) next, then `scalelab bisect mark`.
    Next {
        /// The bisection [default: the newest unfinished one].
        id: Option<i64>,
    },
    /// --no-build: measure what runs now as the commit `next` named, record its verdict and
    /// name the next one.
    Mark {
        /// The bisection [default: the newest unfinished one].
        id: Option<i64>,
        /// The commit could not be built or booted: skip it (as git bisect skip).
        #[arg(long)]
        skip: bool,
        /// No progress: the verdict and what comes next only.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print a bisection: its steps and its answer.
    Show {
        /// The bisection [default: the newest].
        id: Option<i64>,
        #[command(flatten)]
        output: Output,
    },
    /// The stored bisections, one line each.
    List,
}

// One of RUN or --csv, and the usage line says so (`<RUN|--csv <FILE>>`).
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").required(true).args(["run", "csv"])))]
pub struct ModelArgs {
    /// Run id, `last`, `last~K`, or an exported JSON file.
    pub run: Option<String>,
    /// Model rows of `N,throughput` from this file instead (header optional, `#` comments).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Predict throughput at these task counts [default: twice the largest measured N].
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = parse_task_count)]
    pub predict: Vec<f64>,
    /// Fit a run's task counts past its online CPUs too (left out by default: they measure
    /// time-sharing, not scaling); a warning names them either way.
    #[arg(long, conflicts_with = "csv")]
    pub all_n: bool,
    #[command(flatten)]
    pub output: DocOutput,
}

/// The flag that sets a field of a run's configuration: the engine's errors name the field
/// (`runs: 0: …`), the CLI's name the flag (`--runs: 0: …`).
pub fn flag(field: Field) -> &'static str {
    match field {
        Field::Workload => "WORKLOAD",
        Field::Params => "-p",
        Field::Tasks => "--tasks",
        Field::Runs => "--runs",
        Field::MaxRuns => "--max-runs",
        Field::Duration => "--duration",
        Field::Warmup => "--warmup",
        Field::Timeout => "--timeout",
        Field::Command => "--cmd",
        Field::Locks => "--locks",
        Field::Profile => "--profile",
        Field::ProfileTrials => "--profile-trials",
        Field::Workdir => "--workdir",
        Field::Membind => "--membind",
        Field::Name => "--name",
        Field::Variant => "--variant",
        Field::Tags => "--tag",
    }
}

/// `KEY=VAL` (`-p`, `--tag`, `--step`).
fn parse_pin(text: &str) -> Result<Pin, String> {
    text.parse()
}

fn parse_membind(text: &str) -> Result<Membind, String> {
    text.parse()
}

fn parse_every(text: &str) -> Result<model::schedule::Every, model::schedule::EveryError> {
    model::schedule::Every::parse(text)
}

fn parse_class(text: &str) -> Result<model::env::ClassFilter, model::env::ClassFilterError> {
    model::env::ClassFilter::parse(text)
}

fn parse_pair(text: &str) -> Result<(String, String), model::SpecError> {
    model::params::split_pair(text)
}

/// `1%` or `0.01` (a bare number of 1 or more is refused: 1 would mean 100%).
fn parse_threshold(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("`{text}` is not a relative change; write 1% or 0.01"))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!("`{text}` must be 0 or more; write e.g. 1% or 0.01"));
    }
    if !t.ends_with('%') && value >= 1.0 {
        return Err(format!(
            "`{text}` would mean {}%; write {text}% for percent, or a fraction such as 0.01",
            value * 100.0
        ));
    }
    Ok(value)
}

fn parse_alpha(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "`{text}` is not a significance level strictly between 0 and 1 (e.g. 0.05)"
        )),
    }
}

fn parse_task_count(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 1.0 => Ok(n),
        _ => Err(format!("`{text}` is not a task count of 1 or more")),
    }
}

#[cfg(test)]
mod verdict_arg_tests {
    use super::*;

    #[test]
    fn thresholds_read_as_percent_or_fraction() {
        assert_eq!(parse_threshold("1%"), Ok(0.01));
        assert_eq!(parse_threshold("0.01"), Ok(0.01));
        assert_eq!(parse_threshold(" 2.5 %"), Ok(0.025));
        assert_eq!(parse_threshold("0"), Ok(0.0));
        assert!(parse_threshold("1").unwrap_err().contains("1%"));
        assert!(parse_threshold("-1%").is_err());
        assert!(parse_threshold("lots").is_err());
        assert!(
            parse_alpha("0.05").is_ok() && parse_alpha("1").is_err() && parse_alpha("0").is_err()
        );
    }

    /// `--profile-scope`'s help states auto's rule with the figures the lab uses.
    #[test]
    fn the_profile_scope_help_states_autos_rate_and_threshold() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let run = cli.find_subcommand_mut("run").expect("run");
        let help = run.render_long_help().to_string();
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let rate = format!("every CPU at {} Hz", lab::runner::EVERY_CPU_FREQUENCY);
        let threshold = format!(
            "switched {},{:03} times a second",
            lab::runner::SWITCHES_FOR_EVERY_CPU as u64 / 1000,
            lab::runner::SWITCHES_FOR_EVERY_CPU as u64 % 1000
        );
        assert!(flat.contains(&rate) && flat.contains(&threshold), "{flat}");
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TracerArg {
    Kernel,
    Perf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileScopeArg {
    Auto,
    Tasks,
    EveryCpu,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FutexWaitsArg {
    Calls,
    Sleeps,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LocksArg {
    All,
    Kernel,
    User,
}

#[derive(Debug, Args)]
pub struct LocksArgs {
    /// Run id, `last`, `last~K`, or an exported JSON file.
    pub run: String,
    /// The table at this task count instead of what grows across all of them.
    #[arg(long)]
    pub at: Option<u32>,
    /// Only kernel locks.
    #[arg(long, conflicts_with = "user")]
    pub kernel: bool,
    /// Only user locks (futex waits).
    #[arg(long)]
    pub user: bool,
    /// A step of a `--cmd … --step NAME=CMD` run [default: the main command, `cmd`].
    #[arg(long, value_name = "NAME")]
    pub step: Option<String>,
    /// Rows per table.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub output: DocOutput,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Run id, `last`, `last~K`, or an exported JSON file.
    pub run: String,
    /// Print each note whole — why it matters and how to read it — instead of one line each
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    pub output: DocOutput,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").required(true).args(["runs", "bisect"])))]
pub struct ReportArgs {
    /// Runs to include (id, last, last~K, or exported JSON); the first is the baseline of comparisons.
    pub runs: Vec<String>,
    /// The report of bisection ID instead: its commits along the x axis with each one's
    /// change against the good end and its interval.
    #[arg(long, value_name = "ID", conflicts_with = "runs")]
    pub bisect: Option<i64>,
    /// The HTML file to write; `-` writes the page to stdout.
    #[arg(short, long, value_name = "FILE.html")]
    pub output: PathBuf,
    /// The page title [default: the workload or command measured, and the variants compared].
    #[arg(long)]
    pub title: Option<String>,
    /// Comparison threshold (relative: 1% or 0.01).
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = parse_threshold)]
    pub threshold: f64,
    /// Comparison significance level, in (0, 1).
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
}

// One of RUN or --perf-data, and the usage line says so.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").required(true).args(["run", "perf_data"])))]
pub struct ProfileArgs {
    /// Run id, `last`, `last~K`, or an exported JSON file (its perf.data files must still exist).
    pub run: Option<String>,
    /// The top functions at this task count instead of what grows across all of them.
    #[arg(long)]
    pub at: Option<u32>,
    /// Compare with this run at one N (--at, default the largest N both runs profiled).
    #[arg(long, value_name = "RUN")]
    pub diff: Option<String>,
    /// Write an interactive flame graph SVG (differential with --diff).
    #[arg(long, value_name = "FILE.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Rows per table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Add readprofile's normalized load: self samples ÷ function size in bytes.
    #[arg(long)]
    pub load: bool,
    /// A step of a `--cmd … --step NAME=CMD` run (with --diff, of both runs) [default: the
    /// main command, `cmd`].
    #[arg(long, value_name = "NAME", conflicts_with = "perf_data")]
    pub step: Option<String>,
    #[command(flatten)]
    pub output: DocOutput,
    /// Read one perf.data file instead of a run (the whole file, no window, no per-op costs);
    /// also the way bench/speed/profile-speed times scalelab's parse + symbolise + aggregate.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["diff", "at"])]
    pub perf_data: Option<PathBuf>,
    /// The kallsyms file for --perf-data's kernel addresses [default: none].
    #[arg(long, value_name = "FILE", requires = "perf_data")]
    pub kallsyms: Option<PathBuf>,
}
