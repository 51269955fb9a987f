//! Presentation: turns analysed results into text for people (terminal tables) and machines
//! (JSON). Nothing here computes statistics; it formats what `analysis` derived.

pub mod format;
pub mod history_view;
pub mod locks_view;
pub mod html;
pub mod term;
pub mod compare_term;
pub mod compare_view;
pub mod compare_warning;
#[cfg(test)]
pub(crate) mod test_runs;
pub mod model_term;
pub mod model_view;
pub mod percent;
pub mod flamegraph;
pub mod profile_term;
