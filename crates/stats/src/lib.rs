//! Pure statistics for scalelab: no I/O, no clocks, no randomness without a seed.
