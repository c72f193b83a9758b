//! `prefixsim export DIR --format long`: summary.csv in long form (one row per point, strategy
//! and metric), for pandas, R and spreadsheets. Reads only the result files.

use std::path::PathBuf;

use anyhow::anyhow;

use super::{CliResult, Error};
use std::io::Write as _;

use crate::results::table::{summary_long, CsvLines, LongError};
use crate::results::{AtomicFile, WriteError};

pub const EXAMPLES: &str =
    "  prefixsim sweep experiments/hold_vs_prefix_size.toml --out results/hold --force
  prefixsim export results/hold --format long --force  # results/hold/summary_long.csv
  prefixsim export results/hold --format long --out -  # to stdout
";

const AFTER_HELP: &str = "\
Columns: point, the axes (and `<axis>_s`, the seconds of a duration axis), strategy, its
family and parameters (strategy_family, max_wait_s, release, interval_s), metric, value.
The metrics are `replications` and every value column of summary.csv, cells copied as
written. In pandas: pd.read_csv(\"summary_long.csv\").pivot_table(index=[\"point\",
\"strategy\"], columns=\"metric\", values=\"value\") gives the wide table back.
FILE must not exist: --force replaces it (written to NAME.tmp and renamed).";

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One row per (point, strategy, metric).
    Long,
}

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// A directory written by `run --out` or `sweep --out`.
    pub dir: PathBuf,
    /// The layout to write.
    #[arg(long, value_enum)]
    pub format: Layout,
    /// Where to write (default: DIR/summary_long.csv; `-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace FILE when it exists; without it, refused.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> CliResult {
    let Args { dir, format: Layout::Long, out, force } = args;
    if let Some(p) = out.clone().filter(|p| p.as_os_str() != "-") {
        crate::api::outdir::check_file(&p, force)?;
    } else if out.is_none() {
        crate::api::outdir::check_file(&dir.join("summary_long.csv"), force)?;
    }
    // Load the directory as plot does: an unfinished or malformed one is refused (exit 2).
    let results = super::plot::load(&dir)?;
    if results.summary.is_empty() {
        return Err(Error::usage(anyhow!(
            "{}: no summary.csv rows to export (export reads a `run --out` or `sweep --out` directory)",
            dir.display()
        )));
    }
    drop(results);
    let path = dir.join("summary.csv");
    let Some(mut summary) = CsvLines::open(&path).map_err(Error::usage)? else {
        return Err(Error::failed(anyhow!("{}: gone since it was read", path.display())));
    };
    let failed = |e: LongError| match e {
        LongError::Read(e) => Error::usage(e),
        LongError::Write(e) => Error::failed(e),
    };
    match out {
        Some(p) if p.as_os_str() == "-" => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            match summary_long(&mut summary, &mut w).and_then(|_| Ok(w.flush()?)) {
                Err(LongError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.map_err(failed),
            }
        }
        p => {
            let p = p.unwrap_or_else(|| dir.join("summary_long.csv"));
            // A device or a FIFO is not replaced by a file (`--out -` is stdout).
            crate::results::replaceable(&p).map_err(Error::usage)?;
            // Streamed to `NAME.tmp`, renamed when whole: a sweep's long file is ~70 rows a
            // row of summary.csv, more than is worth holding.
            let mut file = AtomicFile::create(&p).map_err(Error::File)?;
            // A write that fails (a full disk) names the file it was writing.
            let tmp = file.tmp().to_path_buf();
            let failed = |e: LongError| match e {
                LongError::Write(source) => Error::File(WriteError { path: tmp.clone(), source }),
                e => failed(e),
            };
            // On an error the file is dropped uncommitted, which removes `NAME.tmp`.
            let rows = summary_long(&mut summary, file.writer()).map_err(failed)?;
            file.commit().map_err(Error::File)?;
            outln!("wrote {} ({rows} rows: point, axes, strategy, metric, value)", p.display())?;
            Ok(())
        }
    }
}
