//! Command-line arguments (clap derive). Converted at once into the engine's domain types;
//! nothing below `main` sees clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXAMPLES: &str = "\
EXAMPLES:
  scalelab list
  scalelab run page_fault                                   # 1,2,4,… up to the online CPUs
  scalelab run page_fault -p lines=8 --tasks 1,2 --runs 5 --duration 2s
  scalelab run atomic -p mode=cmpxchg-retry --tasks 1..4 --mode processes
  scalelab run --cmd 'make -j{n} vmlinux' --prepare 'make clean' --tasks 1,2 --runs 6
  scalelab run --cmd 'tar xf src.tar' --step md5='find src -type f -exec md5sum {} +' --step rm='rm -rf src' --tasks 1
  scalelab ls ; scalelab show last ; scalelab show 3 --json
  scalelab export last --format csv > run.csv ; scalelab export last > run.json ; scalelab import run.json
  scalelab doctor";

#[derive(Debug, Parser)]
#[command(name = "scalelab", version, about = "A Linux scalability lab: sweep a workload over task counts, find what stops it scaling, compare, track.", after_help = EXAMPLES)]
pub struct Cli {
    /// The results database [default: $XDG_DATA_HOME/scalelab/scalelab.db].
    #[arg(long, global = true, env = "SCALELAB_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Built-in workloads: their op, parameters and the kernel path they stress.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Sweep a workload over task counts, repeated, and store every trial.
    Run(RunArgs),
    /// Stored runs, oldest first.
    Ls(LsArgs),
    /// One run's results: throughput, scaling and accounting per N.
    Show {
        /// Run id, `last`, `last~K`, or an exported JSON file.
        run: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a run as JSON (lossless, re-importable) or CSV (one row per trial) to stdout.
    Export {
        run: String,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
    },
    /// Store a run exported from another machine or database.
    Import { file: PathBuf },
    /// What on this machine will make numbers noisy, with a fix for each.
    Doctor {
        #[arg(long)]
        json: bool,
    },
    /// (internal) Run one trial: spec on stdin, measurement on stdout.
    #[command(name = "__trial", hide = true)]
    Trial,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Threads,
    Processes,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PinArg {
    Auto,
    Core,
    None,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A built-in workload (see `scalelab list`); or give --cmd instead.
    #[arg(required_unless_present = "cmd", conflicts_with = "cmd")]
    pub workload: Option<String>,
    /// Measure an external command instead; `{n}` is replaced by the point's task count and the
    /// command runs with its CPU affinity limited to N CPUs.
    #[arg(long, value_name = "CMD")]
    pub cmd: Option<String>,
    /// Run before each command trial, not timed.
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub prepare: Option<String>,
    /// Run after each command trial (also after a failed one), not timed.
    #[arg(long, value_name = "CMD", requires = "cmd")]
    pub cleanup: Option<String>,
    /// A further timed step after --cmd, accounted separately; repeatable, run in order.
    #[arg(long = "step", value_name = "NAME=CMD", requires = "cmd")]
    pub steps: Vec<String>,
    /// Ops per command trial (a known amount of work) [default: 1 completion].
    #[arg(long, value_name = "N", requires = "cmd", conflicts_with = "ops_regex")]
    pub ops: Option<u64>,
    /// Read the op count from the command's stdout: the first capture group of this regex.
    #[arg(long, value_name = "RE", requires = "cmd")]
    pub ops_regex: Option<String>,
    /// Kill a command trial still running after this long and record it as failed.
    #[arg(long, value_name = "DURATION", requires = "cmd")]
    pub timeout: Option<String>,
    /// Workload parameter, repeatable: -p size=64M -p lines=8.
    #[arg(short = 'p', long = "param", value_name = "KEY=VAL")]
    pub params: Vec<String>,
    /// Task counts: 1,2,4 | 1..8 | 1..16:2 | pow2 | all [default: pow2 up to the online CPUs, plus that count].
    #[arg(long, value_name = "SPEC", allow_hyphen_values = true)]
    pub tasks: Option<String>,
    /// Tasks are threads of one process or separate processes.
    #[arg(long, value_enum, default_value_t = ModeArg::Threads)]
    pub mode: ModeArg,
    /// Trials per point, each in a fresh child process.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Measured time per trial (500ms, 5s, 1m).
    #[arg(long, default_value = "5s", allow_hyphen_values = true)]
    pub duration: String,
    /// Unmeasured time per trial before the window opens.
    #[arg(long, default_value = "1s", allow_hyphen_values = true)]
    pub warmup: String,
    /// CPU placement: auto pins one task per CPU (cores first) while N fits the CPUs.
    #[arg(long, value_enum, default_value_t = PinArg::Auto)]
    pub pin: PinArg,
    /// Where file-based workloads create their files: a fresh directory per trial, removed after it [default: the system temporary directory].
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Do not open hardware counters (cycles, instructions).
    #[arg(long)]
    pub no_counters: bool,
    /// Name the side of a comparison this run belongs to (stock, patched…).
    #[arg(long)]
    pub variant: Option<String>,
    /// Label the run, repeatable: --tag kernel=6.8 --tag commit=abc123.
    #[arg(long = "tag", value_name = "KEY=VAL")]
    pub tags: Vec<String>,
    /// A free-text name for the run.
    #[arg(long)]
    pub name: Option<String>,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress, no tables: only errors (the run is still stored).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    #[arg(long)]
    pub workload: Option<String>,
    /// Only runs with this tag, repeatable.
    #[arg(long = "tag", value_name = "KEY=VAL")]
    pub tags: Vec<String>,
    #[arg(long)]
    pub variant: Option<String>,
    #[arg(long)]
    pub json: bool,
}
