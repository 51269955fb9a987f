//! Safe wrappers over the raw Linux primitives scalelab's runner and workloads need.
