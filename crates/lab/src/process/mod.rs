//! The processes scalelab starts and what becomes of them: every child is marked with its owner
//! and dies with scalelab ([`owner`]), what a step or trial leaves running is killed
//! ([`leftovers`]), a guard process cleans up after a scalelab that was killed outright
//! ([`guard`]), and `/proc` is read for all of it ([`proc_table`]).

pub(crate) mod guard;
pub(crate) mod leftovers;
pub(crate) mod owner;
pub(crate) mod proc_table;

pub use guard::serve_guard;
pub use owner::die_with_owner;
