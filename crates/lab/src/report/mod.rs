//! Presentation: turns analysed results into text for people (terminal tables) and machines
//! (JSON). Nothing here computes statistics; it formats what `analysis` derived.

pub mod format;
pub mod term;
pub mod compare_term;
pub mod compare_view;
#[cfg(test)]
mod test_runs;
