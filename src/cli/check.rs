//! `prefixsim check FILE [--set k=v]...`: validate an experiment without running it, and
//! `prefixsim schema`: print the JSON Schema of the experiment file (`config::schema`).

use std::path::PathBuf;

use super::shared::Overrides;
use super::CliResult;

pub const EXAMPLES: &str = "  prefixsim check experiments/default.toml
  prefixsim check experiments/hold_vs_prefix_size.toml --set replications=20
  prefixsim check experiments/default.toml --set workload.agents=64 --set cache.ttl=1h
";

pub const SCHEMA_EXAMPLES: &str = "  prefixsim schema > experiment.schema.json
";

const AFTER_HELP: &str = "\
Everything `run` checks before it starts (or, for a file with a [sweep] table, everything
`sweep` checks: every point of the grid resolved): the file parses, every key is known and in
range (docs/limits.md, \"Value ranges\"), values that pass alone pass together, and the work
estimated is within the limits. Nothing runs and nothing is written. Prints what would run and
the estimated work; exit code 2 with the error `run` or `sweep` would give (one line naming the
file, key and value) when the file would be refused.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// The experiment file (TOML; docs/experiments.md).
    pub file: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
}

pub fn run(args: Args) -> CliResult {
    let sets = args.overrides.assignments()?;
    let checked = crate::api::check(&args.file, &sets)?;
    out!("{}", checked.text(&args.file))
}

const SCHEMA_AFTER_HELP: &str = "\
The schema (JSON Schema draft 2020-12) is generated from the types that read experiment files,
so it names every key, its type and its range; it is also shipped as
schema/experiment.schema.json. It checks the shape of a file (keys, types, ranges of single
values); `prefixsim check FILE` checks the rest (values together, the work).";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(SCHEMA_AFTER_HELP))]
pub struct SchemaArgs {}

pub fn schema(_: SchemaArgs) -> CliResult {
    out!("{}", crate::config::schema::json())
}
