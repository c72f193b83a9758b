//! `prefixsim report DIR`: a design-review report from the result files, in Markdown (figures
//! as SVG files next to it) and as one self-contained HTML page (figures as PNG data URIs).
//!
//! Every file goes through `NAME.tmp` and a rename.

use std::path::PathBuf;

use super::plot::{decoded, load, write_figures, ImageFormat};
use super::{CliResult, Error};
use crate::api::outdir;
use crate::plot;
use crate::report::build::build;
use crate::results::write_atomic;

pub const EXAMPLES: &str = "  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold --force
  prefixsim report results/hold --force               # results/hold/plots/report.{md,html} + figures
  prefixsim report results/hold --out plots/hold/report.md --force
  prefixsim tune experiments/default.toml --param wait_first.max_wait --range '0s..10s step 1s' --out results/tune --force
  prefixsim report results/tune --force               # the recommendation comes from tune.json
";

const AFTER_HELP: &str = "\
The report: the question (manifest.json), the setup and resolved configuration, the
comparison table (mean ± 95% CI), the recommendation (tune.json, else read off the table),
and every figure `prefixsim plot` draws, each with a sentence computed from the data.

FILE (default DIR/plots/report.md) and its .html must not exist: --force replaces them (each
written to NAME.tmp and renamed); the figures' SVGs beside them are replaced with them. Exit
code 2 when DIR holds no results, a file is malformed, or FILE exists and --force is not given.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// A directory written by `run --out`, `sweep --out`, `tune --out` or `replay --out`.
    pub dir: PathBuf,
    /// The Markdown file to write (default: DIR/plots/report.md); the HTML page gets the
    /// same name with `.html`, the figures go next to it as SVG.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace FILE (and its .html and figures) when it exists; without it, refused.
    #[arg(long)]
    pub force: bool,
    /// Print the paths written as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CliResult {
    let md_path = args.out.clone().unwrap_or_else(|| args.dir.join("plots").join("report.md"));
    let md_path = md_path.with_extension("md");
    let html_path = md_path.with_extension("html");
    outdir::check_file(&md_path, args.force)?;
    outdir::check_file(&html_path, args.force)?;
    let results = load(&args.dir)?;
    let figures = plot::figures(&results);
    let doc = build(&results, &figures);
    decoded(&results)?;
    // The figures and the document hold what is drawn and written: the rows read (~1.4 KB a
    // point of a sweep) need not be held while each figure's SVG text is.
    drop(results);
    let out_dir = md_path.parent().map(PathBuf::from).unwrap_or_default();
    let out_dir = if out_dir.as_os_str().is_empty() { PathBuf::from(".") } else { out_dir };
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| Error::failed(anyhow::anyhow!("cannot create {}: {e}", out_dir.display())))?;
    write_figures(&figures, &out_dir, &[ImageFormat::Svg])?;
    write_atomic(&md_path, doc.to_markdown().as_bytes()).map_err(Error::failed)?;
    let mut failure = None;
    let html = doc.to_html(|name| {
        let f = figures.iter().find(|f| f.name == name)?;
        plot::render_png(f).map_err(|e| failure = Some(e)).ok()
    });
    if let Some(e) = failure {
        return Err(Error::failed(e));
    }
    write_atomic(&html_path, html.as_bytes()).map_err(Error::failed)?;
    if args.json {
        let v = serde_json::json!({
            "markdown": md_path.display().to_string(),
            "html": html_path.display().to_string(),
            "figures": figures.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
        });
        out!("{}", super::sorted_json(v))?;
    } else {
        outln!(
            "{}\n{}\n({} figures in {})",
            md_path.display(),
            html_path.display(),
            figures.len(),
            out_dir.display()
        )?;
    }
    Ok(())
}
