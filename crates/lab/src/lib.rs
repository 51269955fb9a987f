//! The scalelab engine.
