//! `prefixsim run` (not built yet: its issue fills this file).

use super::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> CliResult {
    Err(CliError::internal(anyhow::anyhow!("`run` is not built yet")))
}

/// `prefixsim` with no command.
pub fn run_default() -> CliResult {
    super::scenarios::run(super::scenarios::Args::default())
}
