//! `prefixsim report` (not built yet: its issue fills this file).

use super::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> CliResult {
    Err(CliError::internal(anyhow::anyhow!("`report` is not built yet")))
}
