//! `prefixsim models [--json] [--sources] [--models FILE]`: the models an experiment can name:
//! the presets (API ids, prices, tiers, minimum cacheable length, window, latency, and the page
//! and day each row was checked) and the models a file defines, marked as such. The rows are
//! `api::model_rows`; this file prints them.

use std::path::PathBuf;

use super::CliResult;
use crate::api::{self, ModelRow, Tier};
use crate::config::latency_presets::DECODE_RATE_FALLBACK;

pub const EXAMPLES: &str = "  prefixsim models                      # a table for people
  prefixsim models --sources            # where each row comes from, and when it was read
  prefixsim models --json               # the same for programs
  prefixsim models --models data/samples/models.toml   # with the models a file defines
  prefixsim run experiments/default.toml --set model=claude-opus-4-5-20251101
";

const AFTER_HELP: &str = "\
Any API id in `api_ids` names the preset in an experiment (`model = ...`), in `--set` and in
traces. A model a file defines (`--models FILE`, docs/models.md) is listed after the presets,
marked `(file)`. Latency: `overhead_s` is the median fixed part of the time to first token;
rates are tokens per second. Where a model has no measurements, `latency.source` says whose fit
it uses; reproduce the fits with `prefixsim calibrate data/claude-code-ttft`.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Print where each row comes from (page, day checked, how read, notes) instead of prices.
    #[arg(long, conflicts_with = "json")]
    pub sources: bool,
    /// A file of model definitions (`[models."name"]` tables) to list beside the presets.
    #[arg(long, value_name = "FILE")]
    pub models: Option<PathBuf>,
}

pub fn run(args: Args) -> CliResult {
    let rows = api::model_rows(args.models.as_deref())?;
    if args.json {
        out!("{}", api::models_json(&rows))?;
    } else if args.sources {
        out!("{}", sources(&rows))?;
    } else {
        out!("{}", table(&rows))?;
    }
    Ok(())
}

/// `200k`, `1M`, or `200k (1M beta)` when a larger window is offered behind a header.
fn window(tokens: u64, long: Option<u64>) -> String {
    match long {
        Some(l) => format!("{} ({} beta)", short(tokens), short(l)),
        None => short(tokens),
    }
}

/// Tokens in one format: thousands below a million (`200k`, `272k`), millions from one
/// (`1M`, `1.05M`, Gemini's 1,048,576 as `1.049M`), at most 3 decimals, trailing zeros cut.
fn short(t: u64) -> String {
    use crate::numfmt::fixed;
    match t {
        t if t >= 1_000_000 => format!("{}M", fixed(3, t as f64 / 1e6)),
        t if t >= 1_000 => format!("{}k", fixed(1, t as f64 / 1e3)),
        t => t.to_string(),
    }
}

/// `>272k 2x/1.5x`: the tier's threshold and its input and output multiples; `-` when none.
fn tier_cell(t: Option<&Tier>) -> String {
    t.map_or("-".into(), |t| {
        format!(">{} {}x/{}x", short(t.threshold_tokens), t.input_multiplier, t.output_multiplier)
    })
}

const HEADER: [&str; 13] = [
    "model",
    "input $/M",
    "read $/M",
    "5m write $/M",
    "min cache",
    "window",
    "tier",
    "overhead",
    "p99",
    "prefill tok/s",
    "cached tok/s",
    "decode tok/s",
    "latency from",
];

/// One line of the table.
fn row_cells(r: &ModelRow) -> Vec<String> {
    let name = match r.defined_in {
        Some(_) => format!("{} (file)", r.name),
        None => r.name.clone(),
    };
    let mut cells = vec![
        name,
        format!("{:.2}", r.prices.input_usd_per_mtok),
        format!("{:.3}", r.prices.cache_read_usd_per_mtok),
        format!("{:.4}", r.prices.cache_write_5m_usd_per_mtok),
        r.min_cacheable_tokens.to_string(),
        window(r.context_window_tokens, r.long_context_window_tokens),
        tier_cell(r.tier.as_ref()),
    ];
    let Some(l) = &r.latency else {
        cells.extend(["-", "-", "-", "-", "-", "own keys"].map(String::from));
        return cells;
    };
    let mark = |fitted: bool| if fitted { "" } else { "*" };
    let from = match l.source.split_once("borrows the fit of ") {
        Some((_, rest)) => rest.split(' ').next().unwrap_or("").to_string(),
        None => "own fit".to_string(),
    };
    cells.extend([
        format!("{:.2}s", l.overhead_s),
        format!("{:.2}s", l.overhead_p99_s),
        format!("{:.0}", l.prefill_rate),
        l.cached_rate.map_or("-".into(), |r| format!("{r:.0}")),
        format!("{:.0}{}", l.decode_rate, mark(l.decode_rate_fitted)),
        from,
    ]);
    cells
}

/// Columns padded to their widest cell: the first and last left-aligned.
fn aligned(cells: &[Vec<String>]) -> String {
    let n = cells[0].len();
    let widths: Vec<usize> =
        (0..n).map(|c| cells.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in cells {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| match c {
                c if c == 0 || c == n - 1 => format!("{v:<w$}", w = widths[c]),
                _ => format!("{v:>w$}", w = widths[c]),
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn table(rows: &[ModelRow]) -> String {
    let mut cells: Vec<Vec<String>> = vec![HEADER.iter().map(|h| h.to_string()).collect()];
    cells.extend(rows.iter().map(row_cells));
    let mut out = aligned(&cells);
    out.push_str(&format!(
        "\ntier >T Ix/Ox: a request whose input (uncached + written + read) is above T tokens pays \
         I times the input and cache prices and O times the output price on all its tokens\n\
         overhead: median fixed part of the time to first token, p99: its 99th \
         percentile (simulated draws spread as the measured residuals do, tail included)\n\
         cached tok/s -: the time to first token does not grow measurably with cached tokens, and \
         none is simulated; * decode not identifiable: {DECODE_RATE_FALLBACK:.0} tok/s\n\
         latency from: the model whose fit is used, when the model's own data (if any) do not \
         identify one (docs/calibrate.md)\n\
         where each row comes from and when it was checked: prefixsim models --sources \
         (docs/models.md)\n"
    ));
    out
}

/// `--sources`: each model's page, the day it was checked, how it was read and its notes.
fn sources(rows: &[ModelRow]) -> String {
    let mut cells = vec![["model", "checked", "source"].map(String::from).to_vec()];
    let mut notes = String::new();
    for r in rows {
        let name = match &r.defined_in {
            Some(file) => format!("{} (file {file})", r.name),
            None => r.name.clone(),
        };
        let dash = || "-".to_string();
        let (checked, source) = (r.checked.clone(), r.source.clone());
        cells.push(vec![name, checked.unwrap_or_else(dash), source.unwrap_or_else(dash)]);
        for (what, text) in [("read", &r.read), ("note", &r.note)] {
            if let Some(t) = text {
                notes.push_str(&format!("{} {what}: {t}\n", r.name));
            }
        }
    }
    let mut out = aligned(&cells);
    out.push_str(
        "\nchecked: the day the numbers were last read on the source; \"stored copy\": \
                  read in a stored copy of the page, not the live page\n\n",
    );
    out.push_str(&notes);
    out
}
