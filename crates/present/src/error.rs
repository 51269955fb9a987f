//! The presentation layer's error type. Rendering fails only on a bug (a template or a chart
//! that does not draw), or when the output cannot be written.

use thiserror::Error;

/// Why a report could not be rendered: always a bug in scalelab, never in the data.
#[derive(Debug, Error)]
pub enum PresentError {
    /// A `minijinja` template failed to load or render.
    #[error("internal error: HTML template: {0} (please report this)")]
    Template(String),
    /// An SVG chart failed to draw.
    #[error("internal error: {0} (please report this)")]
    Chart(String),
}
