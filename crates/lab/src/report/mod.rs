//! Presentation: turns analysed results into text for people (terminal tables) and machines
//! (JSON). Nothing here computes statistics; it formats what `analysis` derived.

pub mod compare_term;
pub mod compare_view;
pub mod compare_warning;
pub mod flamegraph;
pub mod format;
pub mod history_view;
pub mod html;
pub mod locks_view;
pub mod model_term;
pub mod model_view;
pub mod percent;
pub mod profile_term;
pub mod term;
#[cfg(test)]
pub(crate) mod test_runs;
