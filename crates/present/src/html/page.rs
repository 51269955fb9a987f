//! The page the templates fill: strings, tables of already-formatted cells and inline SVG — the
//! comparison first (with its chart of every run's curve), then one section per run, then the
//! history. Everything here is text to show; the templates escape every string but the chart
//! SVG.

use serde::Serialize;

/// The whole page.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Page {
    pub(super) title: String,
    pub(super) tool_version: String,
    pub(super) generated_at: String,
    pub(super) runs: Vec<RunSection>,
    /// Every run's throughput in one chart, when the page compares runs.
    pub(super) comparison_chart: Option<String>,
    pub(super) comparisons: Vec<ComparisonSection>,
    pub(super) history: Option<HistorySection>,
}

/// A table of already-formatted cells.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Table {
    pub(super) caption: String,
    pub(super) headers: Vec<String>,
    pub(super) rows: Vec<Vec<String>>,
    /// The first `left_columns` columns hold text and are left-aligned.
    pub(super) left_columns: usize,
    /// The one line shown instead of the table when it has no rows.
    pub(super) empty: String,
}

/// An interactive flame graph (inferno SVG with its script), shown in a sandboxed frame.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Flame {
    pub(super) title: String,
    pub(super) svg: String,
    /// The drawing's height in pixels, so its frame shows all of it.
    pub(super) height: u32,
}

/// One run's section.
#[derive(Debug, Clone, Serialize)]
pub(super) struct RunSection {
    pub(super) id: i64,
    pub(super) name: Option<String>,
    pub(super) description: String,
    pub(super) workload: String,
    pub(super) op_unit: String,
    /// (label, value): `-p KEY` for a built-in workload's parameters, the step's name for a
    /// command's.
    pub(super) params: Vec<(String, String)>,
    pub(super) variant: Option<String>,
    pub(super) tags: Vec<(String, String)>,
    pub(super) status: String,
    pub(super) started_at: String,
    pub(super) command_line: String,
    pub(super) warnings: Vec<String>,
    /// Why it stops scaling, at the top of the section.
    pub(super) explain: Option<ExplainSection>,
    pub(super) scales_to: String,
    /// Inline SVG documents drawn by `plot`.
    pub(super) charts: Vec<String>,
    pub(super) tables: Vec<Table>,
    pub(super) flamegraphs: Vec<Flame>,
    pub(super) environment: Vec<(String, String)>,
}

/// One comparison's section.
#[derive(Debug, Clone, Serialize)]
pub(super) struct ComparisonSection {
    pub(super) title: String,
    /// The overall verdict (REGRESSED, IMPROVED, NO CHANGE, INCONCLUSIVE …).
    pub(super) verdict: String,
    /// What the verdict is about: metric, threshold, alpha.
    pub(super) summary: String,
    pub(super) warnings: Vec<String>,
    pub(super) table: Table,
}

/// The history's section.
#[derive(Debug, Clone, Serialize)]
pub(super) struct HistorySection {
    pub(super) summary: String,
    pub(super) chart: String,
    pub(super) table: Table,
}

/// A run's explanation: the answer, the accounting per N, the growth by cause, what is missing.
#[derive(Debug, Clone, Serialize)]
pub(super) struct ExplainSection {
    pub(super) answer: String,
    /// The pictures of the answer (inline SVG): the time per op by part at each N, and the
    /// growth by cause when there are two N or more.
    pub(super) charts: Vec<String>,
    pub(super) tables: Vec<Table>,
    pub(super) missing: Vec<String>,
    pub(super) noise: String,
}
