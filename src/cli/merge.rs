//! `prefixsim merge DIR... --out DIR`: combine the outputs of the shards of one sweep into the
//! outputs of the whole sweep (byte-identical to a single-machine run).

use std::path::PathBuf;

use super::CliResult;
use crate::api;

pub const EXAMPLES: &str =
    "  prefixsim sweep experiments/hold_vs_prefix_size.toml --shard 0/2 --out results/shard-0 --force
  prefixsim sweep experiments/hold_vs_prefix_size.toml --shard 1/2 --out results/shard-1 --force
  prefixsim merge results/shard-0 results/shard-1 --out results/all --force
  prefixsim merge results/shard-* --out results/all --force --json   # replace results/all
";

const AFTER_HELP: &str = "\
Each DIR is the --out of one `prefixsim sweep ... --shard K/N`; every shard 0..N-1 must be
given exactly once, finished, and of the same experiment (same content hash). The result in
--out is byte-identical to running the sweep on one machine.

Exit code 2 when shards are missing, overlap, are unfinished or belong to different experiments,
when a DIR is not a directory, when --out holds files (--force replaces it), or when another
process is writing --out.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// The shard output directories.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where to write the merged outputs (a directory absent or empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace --out when it holds files (atomically: written beside it, then swapped in);
    /// without it such a directory is refused.
    #[arg(long)]
    pub force: bool,
    /// Print a JSON report instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CliResult {
    let rep = api::merge_shards(&args.dirs, &args.out, args.force)?;
    if args.json {
        let v = serde_json::json!({
            "out": args.out.display().to_string(),
            "shards": rep.shards,
            "points": rep.points,
        });
        out!("{}", super::sorted_json(v))?;
    } else {
        outln!(
            "merged {} shards, {} points -> {}/{{summary.csv, runs.csv, histograms/, manifest.json}}",
            rep.shards,
            rep.points,
            args.out.display()
        )?;
    }
    Ok(())
}
