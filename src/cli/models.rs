//! `prefixsim models [--json]`: the model presets an experiment can name: API ids, prices,
//! minimum cacheable length, and latency (the calibrated fit, or the sibling it borrows).

use serde::Serialize;

use super::{CliResult, Error};
use crate::config;
use crate::config::latency_presets::{self, DECODE_RATE_FALLBACK};

pub const EXAMPLES: &str = "  prefixsim models                      # a table for people
  prefixsim models --json               # the same for programs
  prefixsim run experiments/default.toml --set model=claude-opus-4-5-20251101
";

const AFTER_HELP: &str = "\
Any API id in `api_ids` names the preset in an experiment (`model = ...`), in `--set` and in
traces. Latency: `overhead_s` is the median fixed part of the time to first token; rates are
tokens per second. Where a model has no measurements, `latency.source` says whose fit it uses;
reproduce the fits with `prefixsim calibrate data/claude-code-ttft`.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ModelRow {
    name: &'static str,
    api_ids: Vec<String>,
    prices: Prices,
    min_cacheable_tokens: u64,
    context_window_tokens: u64,
    /// The larger window the model offers behind a beta header (absent when none).
    long_context_window_tokens: Option<u64>,
    latency: Latency,
}

/// Dollars per million tokens.
#[derive(Serialize)]
struct Prices {
    input_usd_per_mtok: f64,
    output_usd_per_mtok: f64,
    cache_write_5m_usd_per_mtok: f64,
    cache_write_1h_usd_per_mtok: f64,
    cache_read_usd_per_mtok: f64,
}

#[derive(Serialize)]
struct Latency {
    overhead_s: f64,
    prefill_rate: f64,
    /// `None`: the fit found no measurable time per cached token, and none is simulated.
    cached_rate: Option<f64>,
    decode_rate: f64,
    /// Whether `decode_rate` was identified by the data (else a fallback).
    decode_rate_fitted: bool,
    /// The overhead's 99th percentile (the measured residuals' fitted tail), seconds.
    overhead_p99_s: f64,
    source: String,
}

pub fn run(args: Args) -> CliResult {
    let rows: Vec<ModelRow> = config::preset_names().into_iter().map(row).collect();
    if args.json {
        let v = serde_json::json!({ "models": rows });
        let text = serde_json::to_string_pretty(&v).map_err(Error::failed)?;
        outln!("{text}")?;
    } else {
        out!("{}", table(&rows))?;
    }
    Ok(())
}

fn row(name: &'static str) -> ModelRow {
    let m = config::preset(name).expect("listed presets exist");
    let (fit, source) = latency_presets::fit_for(name).expect("every preset has a latency fit");
    let usd = |x: f64| (x * m.input_usd_per_mtok * 1e6).round() / 1e6;
    ModelRow {
        name,
        api_ids: config::model_ids::api_ids(name),
        prices: Prices {
            input_usd_per_mtok: m.input_usd_per_mtok,
            output_usd_per_mtok: m.output_usd_per_mtok,
            cache_write_5m_usd_per_mtok: usd(m.write_5m_multiplier),
            cache_write_1h_usd_per_mtok: usd(m.write_1h_multiplier),
            cache_read_usd_per_mtok: usd(m.read_multiplier),
        },
        min_cacheable_tokens: m.min_cacheable_tokens,
        context_window_tokens: m.context_window_tokens,
        long_context_window_tokens: m.long_context.as_ref().map(|l| l.window_tokens),
        latency: Latency {
            overhead_s: fit.overhead_s,
            prefill_rate: fit.prefill_rate,
            cached_rate: fit.cached_rate,
            decode_rate: fit.decode_rate.unwrap_or(DECODE_RATE_FALLBACK),
            decode_rate_fitted: fit.decode_rate.is_some(),
            overhead_p99_s: (fit.overhead.quantile_s(0.99) * 1e4).round() / 1e4,
            source,
        },
    }
}

/// `200k`, `1M`, or `200k (1M beta)` when a larger window is offered behind a header.
fn window(tokens: u64, long: Option<u64>) -> String {
    let short = |t: u64| match t {
        t if t >= 1_000_000 && t % 1_000_000 == 0 => format!("{}M", t / 1_000_000),
        t if t % 1_000 == 0 => format!("{}k", t / 1_000),
        t => t.to_string(),
    };
    match long {
        Some(l) => format!("{} ({} beta)", short(tokens), short(l)),
        None => short(tokens),
    }
}

fn table(rows: &[ModelRow]) -> String {
    let header = [
        "model",
        "input $/M",
        "read $/M",
        "5m write $/M",
        "min cache",
        "window",
        "overhead",
        "p99",
        "prefill tok/s",
        "cached tok/s",
        "decode tok/s",
        "latency from",
    ];
    let mut cells: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for r in rows {
        let l = &r.latency;
        let mark = |fitted: bool| if fitted { "" } else { "*" };
        let from = match l.source.split_once("borrows the fit of ") {
            Some((_, rest)) => rest.split(' ').next().unwrap_or("").to_string(),
            None => "own fit".to_string(),
        };
        cells.push(vec![
            r.name.to_string(),
            format!("{:.2}", r.prices.input_usd_per_mtok),
            format!("{:.3}", r.prices.cache_read_usd_per_mtok),
            format!("{:.4}", r.prices.cache_write_5m_usd_per_mtok),
            r.min_cacheable_tokens.to_string(),
            window(r.context_window_tokens, r.long_context_window_tokens),
            format!("{:.2}s", l.overhead_s),
            format!("{:.2}s", l.overhead_p99_s),
            format!("{:.0}", l.prefill_rate),
            l.cached_rate.map_or("-".into(), |r| format!("{r:.0}")),
            format!("{:.0}{}", l.decode_rate, mark(l.decode_rate_fitted)),
            from,
        ]);
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|c| cells.iter().map(|r| r[c].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &cells {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| match c {
                0 | 11 => format!("{v:<w$}", w = widths[c]),
                _ => format!("{v:>w$}", w = widths[c]),
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "\noverhead: median fixed part of the time to first token, p99: its 99th \
         percentile (simulated draws spread as the measured residuals do, tail included)\n\
         cached tok/s -: the time to first token does not grow measurably with cached tokens, and \
         none is simulated; * decode not identifiable: {DECODE_RATE_FALLBACK:.0} tok/s\n\
         latency from: the model whose fit is used, when the model's own data (if any) do not \
         identify one (docs/calibrate.md)\n"
    ));
    out
}
