//! The presentation layer's error type. Rendering fails only on a bug (a template or a chart
//! that does not draw), or when the output cannot be written.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PresentError {
    #[error("internal error: HTML template: {0} (please report this)")]
    Template(String),
    #[error("internal error: {0} (please report this)")]
    Chart(String),
}
