//! Presentation: turns analysed results into text for people (terminal tables) and machines
//! (JSON). Nothing here computes statistics; it formats what `analysis` derived.

pub mod format;
pub mod term;
