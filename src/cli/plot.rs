//! `prefixsim plot DIR`: draw every figure the results in DIR support, as SVG and/or PNG.
//!
//! Reads only the result files (no simulation). Each file is written to `NAME.tmp` and
//! renamed, so a failed run leaves no half-written figure.

use std::path::{Path, PathBuf};

use super::{CliResult, Error};
use crate::plot::{self, Figure};
use crate::results::{write_atomic, AtomicFile, Results, ResultsError};

pub const EXAMPLES: &str =
    "  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold --force
  prefixsim plot results/hold --force                  # results/hold/plots/*.svg, *.png
  prefixsim plot results/hold --out plots/hold --format svg --force
  prefixsim sweep experiments/warm_vs_cold_parent.toml --out results/warm --force
  prefixsim plot results/warm --at workload.parent_idle=0s --at cache.ttl=1h --out results/warm/slice --force
                                                       # another slice than [plot] baseline
  prefixsim run experiments/default.toml --out results/run --trace --force
  prefixsim plot results/run --json --force            # the list of figures, for programs
  prefixsim plot --covered-prefix --out plots/covered --force   # covered_prefix.{svg,png} alone
";

const AFTER_HELP: &str = "\
Figures, chosen from what DIR holds:
  <metric>_vs_<axis>       cost, hit rate, makespan, launch wait p99, throughput vs each swept
                           axis (zipped axes share one, their partners' values named), to
                           scale (log when the values span 20x or more); one line and marker
                           shape per strategy with its 95% CI band; the hold cap's default
                           (5 s) marked when the axis is a max_wait/stagger key
  heatmap_cost_saved       two-axis sweeps: cost saved by wait_first vs eager (%)
  pareto_cost_makespan     mean cost (from zero) vs p99 makespan, the frontier drawn
  <latency>_percentiles    launch_wait, ttft, completion on the log \"nines\" axis (log y
                           when one strategy's latencies are 30x another's)
  <latency>_histogram      the same as step outlines, strategies overlaid
  <metric>_vs_<family>_<p> strategies of one family differing in one value, e.g.
                           wait_first(max_wait=1s|2s|5s): that value as the x axis
  timeline_<strategy>      run --trace: one lane per agent, segments and request outcomes;
                           a zoomed panel of the launch when it is a small part of the run
  tune_objective, tune_launch_wait_p99            tune.json: candidates, recommendation marked
  replay_hit_rate_vs_ttl, replay_reuse_gap_*, ... replay.json: hit-rate curves, reuse gaps
  covered_prefix           hold experiments (any wait_first): the cold prefix a cap covers,
                           (cap - overhead) x prefill rate, per model's calibrated latency

A sweep's figures hold the axes they do not draw at the experiment's `[plot] baseline`
(else its own base values; the title says where); --at KEY=VALUE picks another slice.
Every figure: 1200x750, embedded DejaVu Sans, one colour per strategy family everywhere.
The same input gives the same bytes. The figures go into --out (default DIR/plots), which must
not exist or be empty; --force replaces it (atomically: written beside it, then swapped in).
Exit code 2 when DIR holds no results or a file is malformed (the error names the file and
line), or when --out holds files and --force is not given.";

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Svg,
    Png,
}

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// A directory written by `run --out`, `sweep --out`, `tune --out` or `replay --out`.
    #[arg(required_unless_present = "covered_prefix")]
    pub dir: Option<PathBuf>,
    /// Draw only the covered-prefix figure (from the latency presets; no DIR needed).
    #[arg(long, conflicts_with = "dir")]
    pub covered_prefix: bool,
    /// Where to write the figures: a directory absent or empty (default: DIR/plots; needed
    /// with --covered-prefix).
    #[arg(long, value_name = "DIR", required_if_eq("covered_prefix", "true"))]
    pub out: Option<PathBuf>,
    /// Replace --out when it holds files (atomically: written beside it, then swapped in);
    /// without it such a directory is refused.
    #[arg(long)]
    pub force: bool,
    /// Image formats, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "svg,png")]
    pub format: Vec<ImageFormat>,
    /// Hold a swept axis at this value instead of the experiment's baseline (repeatable;
    /// KEY is the axis's dotted name or its last part, e.g. `cache.ttl=1h`).
    #[arg(long, value_name = "KEY=VALUE", conflicts_with = "covered_prefix")]
    pub at: Vec<String>,
    /// Print the figures written as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Load DIR; "no results" and malformed files are the user's input (exit 2).
pub fn load(dir: &Path) -> Result<Results, Error> {
    Results::load(dir).map_err(|e| match e {
        ResultsError::Io { .. } => Error::failed(e),
        _ => Error::usage(e),
    })
}

/// After the figures are made: a histogram they asked for that did not decode, or runs that
/// did not read again, are the user's input (exit 2), before anything is written.
pub fn decoded(results: &Results) -> Result<(), Error> {
    results.check_reads().map_err(Error::usage)
}

/// Draw `figures` into `out` (a directory that exists) in each format; the paths written, per
/// figure.
pub fn write_figures(
    figures: &[Figure],
    out: &Path,
    formats: &[ImageFormat],
) -> Result<Vec<Vec<PathBuf>>, Error> {
    let mut written = Vec::new();
    for f in figures {
        let mut paths = Vec::new();
        for fmt in formats {
            let ext = clap::ValueEnum::to_possible_value(fmt).expect("no variant is skipped");
            let path = out.join(format!("{}.{}", f.name, ext.get_name()));
            match fmt {
                // Rendered into one string, then written atomically (a figure reduces its lines
                // to one point per pixel column, so the string stays small).
                ImageFormat::Svg => {
                    let mut file = AtomicFile::create(&path).map_err(Error::failed)?;
                    plot::write_svg(f, file.writer()).map_err(Error::failed)?;
                    file.commit().map_err(Error::failed)?;
                }
                ImageFormat::Png => {
                    let bytes = plot::render_png(f).map_err(Error::failed)?;
                    write_atomic(&path, &bytes).map_err(Error::failed)?;
                }
            }
            paths.push(path);
        }
        written.push(paths);
    }
    Ok(written)
}

/// The figures to draw and where they go by default.
fn chosen(args: &Args) -> Result<(Vec<Figure>, PathBuf), Error> {
    let Some(dir) = args.dir.as_ref().filter(|_| !args.covered_prefix) else {
        let out = args.out.clone().expect("clap requires --out with --covered-prefix");
        return Ok((vec![plot::covered::standalone()], out));
    };
    let mut at = Vec::new();
    for pair in &args.at {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(Error::usage(anyhow::anyhow!(
                "--at {pair}: expected KEY=VALUE, e.g. --at cache.ttl=1h"
            )));
        };
        at.push((k.trim().to_string(), v.trim().to_string()));
    }
    let results = load(dir)?;
    let figures = plot::figures_at(&results, &at)
        .map_err(|e| Error::usage(anyhow::anyhow!("{}: {e}", dir.display())))?;
    decoded(&results)?;
    if figures.is_empty() {
        return Err(Error::usage(anyhow::anyhow!(
            "{}: the results hold nothing to draw (no summary.csv rows, histograms or trace.csv)",
            dir.display()
        )));
    }
    Ok((figures, dir.join("plots")))
}

pub fn run(args: Args) -> CliResult {
    let (figures, default_out) = chosen(&args)?;
    let mut formats = args.format.clone();
    formats.dedup();
    let out = args.out.clone().unwrap_or(default_out);
    let dir = crate::api::outdir::open(&out, args.force, "")?;
    let written = write_figures(&figures, dir.path(), &formats)?;
    let written: Vec<Vec<PathBuf>> =
        written.iter().map(|p| p.iter().map(|p| dir.shown(p)).collect()).collect();
    dir.commit()?;
    if args.json {
        let list: Vec<serde_json::Value> = figures
            .iter()
            .zip(&written)
            .map(|(f, p)| {
                serde_json::json!({
                    "name": f.name, "kind": f.spec.kind(), "title": f.title, "caption": f.caption,
                    "files": p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                })
            })
            .collect();
        out!("{}", super::sorted_json(list.into()))?;
        return Ok(());
    }
    let width = figures.iter().map(|f| f.name.len()).max().unwrap_or(0);
    outln!("{} figures in {}", figures.len(), out.display())?;
    for f in &figures {
        outln!("  {:width$}  {}", f.name, f.title)?;
    }
    Ok(())
}
