//! The integration tests of the `scalelab` binary, one test binary (a module per area, one
//! shared harness in [`common`]): they drive the real CLI on real, short workloads.

mod common;
use store::test_server;

mod big_machine;
mod bisect;
mod browser;
mod cli;
mod command_attribution;
mod commands;
mod compare;
mod conventions;
mod dashboard_guard;
mod doctor;
mod explain;
mod explain_picture;
mod file_safety;
mod fleet;
mod history;
mod hostile;
mod hostile_queue;
mod input_limits;
mod locks;
mod offcpu;
mod output;
mod peak_memory;
mod pg_urls;
mod processes;
mod profile;
mod real_programs;
mod report;
mod runs_list;
mod system_under_test;
mod team_lab;
mod wording;
mod workloads;
