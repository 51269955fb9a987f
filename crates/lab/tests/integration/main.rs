//! The integration tests of the `lab` engine through its public API, one test binary with a
//! module per area.

mod command_processes;
mod pg_tls;
mod store_api;

use store::test_server;
