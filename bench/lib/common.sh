# bench/lib/common.sh: what every bench script shares. Sourced, never run:
#
#   . "$(cd "$(dirname "$0")/.." && pwd)/lib/common.sh"
#   bench_init "$@"; set -- ${bench_args[@]+"${bench_args[@]}"}
#
# It owns four things and nothing else:
#   - `--smoke`: bench_init takes it out of the arguments and sets smoke=1 (and BENCH_SMOKE=1 in
#     the environment, which bench/lib/tabulate.py reads). A smoke run runs the bench's own code
#     path on its smallest real case, in seconds, with the debug binary CI's `cargo test` built;
#     it checks that the bench works, never what it measures, so a missed target does not fail it
#     (bench_exit) while an error does.
#   - the binaries: bench_scalelab sets $scalelab (SCALELAB_BIN, else target/release/scalelab
#     built here, else in a smoke run target/debug/scalelab, built only when missing);
#     bench_example does the same for a crate's example.
#   - a work folder removed at exit ($work, bench_workdir), with more to do at exit (bench_at_exit).
#   - running and reading: bench_interleave (arms in turn, round after round), bench_throughput
#     (the last run's throughput), bench_tracefs, bench_load.
# Tables and figures are computed in bench/lib/tabulate.py, not here.

set -euo pipefail

bench_here=$(cd "$(dirname "$0")" && pwd)
bench_root=$(cd "$bench_here/../.." && pwd)
bench_lib="$bench_root/bench/lib"
bench_name="${bench_here##*/}/$(basename "$0")"
here=$bench_here
root=$bench_root
smoke=0
bench_args=()
bench_exit_cmds=()

# Takes --smoke out of the arguments (into $smoke); the rest are left in bench_args.
bench_init() {
  local a
  for a in "$@"; do
    if [ "$a" = --smoke ]; then smoke=1; else bench_args+=("$a"); fi
  done
  if [ "$smoke" = 1 ]; then
    export BENCH_SMOKE=1
    echo "$bench_name: smoke run (the smallest real case; figures mean nothing, targets are not judged)" >&2
  fi
}

bench_at_exit() { bench_exit_cmds+=("$1"); }
_bench_on_exit() { # the last registered first, as a folder is removed after what was mounted in it
  local i
  for ((i = ${#bench_exit_cmds[@]} - 1; i >= 0; i--)); do eval "${bench_exit_cmds[$i]}" || true; done
}
trap _bench_on_exit EXIT

# A temporary folder in $work, removed at exit.
bench_workdir() {
  work=$(mktemp -d)
  bench_at_exit 'rm -rf "$work"'
}

bench_target_dir() { echo "${CARGO_TARGET_DIR:-$bench_root/target}"; }

# Sets $scalelab: SCALELAB_BIN when set; a smoke run takes target/debug/scalelab (CI's test build
# made it; built here only when missing); a full run builds and takes the release binary.
bench_scalelab() {
  if [ -n "${SCALELAB_BIN:-}" ]; then
    scalelab=$SCALELAB_BIN
  elif [ "$smoke" = 1 ]; then
    scalelab="$(bench_target_dir)/debug/scalelab"
    [ -x "$scalelab" ] || cargo build --locked -q -p scalelab --manifest-path "$bench_root/Cargo.toml"
  else
    cargo build --release --locked -q -p scalelab --manifest-path "$bench_root/Cargo.toml"
    scalelab="$(bench_target_dir)/release/scalelab"
  fi
}

# bench_example NAME PACKAGE [FEATURES]: sets $example to the example's binary, release in a full
# run, debug in a smoke run (built by CI's `cargo test`, which builds every example).
bench_example() {
  local name=$1 package=$2 features=${3:-} profile=release flags=(--release)
  [ "$smoke" = 1 ] && { profile=debug; flags=(); }
  example="$(bench_target_dir)/$profile/examples/$name"
  if [ "$smoke" = 0 ] || [ ! -x "$example" ]; then
    cargo build ${flags[@]+"${flags[@]}"} --locked -q -p "$package" ${features:+--features "$features"} \
      --example "$name" --manifest-path "$bench_root/Cargo.toml"
  fi
}

# The throughput (ops/s) of the last run in $SCALELAB_DB.
bench_throughput() { "$scalelab" show last --json | python3 "$bench_lib/tabulate.py" throughput; }

# bench_interleave ROUNDS ARM…: calls each ARM (a function or command) in turn, ROUNDS times,
# so that the machine's drift hits every arm alike. ROTATE=1 starts each round at the next arm.
bench_interleave() {
  local rounds=$1 r i k
  shift
  local arms=("$@")
  for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < ${#arms[@]}; i++)); do
      k=$i
      [ "${ROTATE:-0}" = 1 ] && k=$(((r + i) % ${#arms[@]}))
      ${arms[$k]}
    done
  done
}

# Mounts tracefs where it is not (the lock and scheduler tracepoints).
bench_tracefs() {
  [ -e /sys/kernel/tracing/events/sched ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
}

bench_load() { echo "load average $1: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"; }

# bench_exit STATUS: 1 is a missed target, which a smoke run reports and does not fail on.
bench_exit() {
  local status=${1:-0}
  if [ "$smoke" = 1 ] && [ "$status" = 1 ]; then
    echo "$bench_name: smoke run: a target was missed (not judged in a smoke run)" >&2
    status=0
  fi
  exit "$status"
}

# bench_skip MESSAGE: a full run without what it needs says so and ends well; a smoke run fails,
# as CI installs everything every bench needs.
bench_skip() {
  if [ "$smoke" = 1 ]; then
    echo "$bench_name: $1 (a smoke run needs it)" >&2
    exit 2
  fi
  echo "skipped: $1"
  exit 0
}
