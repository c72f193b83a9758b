//! A calibration for programs (`--json`, `calibration.json`), for people (the table) and for
//! the simulator (`latency.toml`: a `[latency."MODEL"]` table per model in the experiment
//! distribution syntax of `dist`). Pure: strings in, strings out.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::check::{Exceed, EXCEED_PROBS};
use super::estimate::{Calibration, Interval, ModelFit};
use super::tail::Spliced;
use crate::numfmt::pct;
use crate::replay::output::{table, thousands};

/// Seconds in outputs: 0.1 ms (`+ 0.0` turns a rounded `-0.0` into `0.0`).
fn s4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4 + 0.0
}

/// Rates in outputs: 0.1 token/s.
fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0 + 0.0
}

/// An interval as `[lo, hi]`, each end rounded by `f`; a non-finite end is `null`.
fn pair(i: &Interval, f: fn(f64) -> f64) -> [Option<f64>; 2] {
    let end = |x: f64| x.is_finite().then(|| f(x));
    [end(i.lo), i.hi.and_then(end)]
}

/// Shares in outputs: 0.0001.
fn share(x: f64) -> f64 {
    (x * 1e4).round() / 1e4 + 0.0
}

fn exceed_json(e: &Exceed) -> Value {
    json!({"p50": share(e[0]), "p90": share(e[1]), "p95": share(e[2]), "p99": share(e[3])})
}

/// A `dist::Spliced` in seconds, its shape rounded as a share.
fn dist_json(d: &Spliced) -> Value {
    json!({
        "body_s": d.body.iter().map(|&x| s4(x)).collect::<Vec<_>>(),
        "p_tail": d.p_tail,
        "scale_s": s4(d.scale),
        "shape": share(d.shape),
        "max_s": s4(d.max),
    })
}

/// `{"models": [...]}`, pretty-printed with a final newline.
pub fn json(cal: &Calibration) -> String {
    let models: Vec<Value> = cal.models.iter().map(|m| model_json(m, cal)).collect();
    serde_json::to_string_pretty(&json!({ "models": models })).expect("calibration serializes")
        + "\n"
}

fn model_json(m: &ModelFit, cal: &Calibration) -> Value {
    let ci = &m.ci95;
    let rate_ci = |i: &Option<Interval>| i.as_ref().map(|i| pair(i, r1));
    let not_identifiable: BTreeMap<&str, &str> =
        m.not_identifiable.iter().map(|(k, v)| (*k, v.as_str())).collect();
    json!({
        "model": m.model,
        "preset": m.preset,
        "requests": m.requests,
        "identified": m.identified,
        "overhead_s": s4(m.overhead_s),
        "prefill_rate": m.prefill_rate.map(r1),
        "cached_rate": m.cached_rate.map(r1),
        "attention_rate": m.attention_rate.map(r1),
        "decode_rate": m.decode_rate.map(r1),
        "median_abs_error_s": s4(m.median_abs_error_s),
        "ci95": {
            "overhead_s": pair(&ci.overhead_s, s4),
            "prefill_rate": rate_ci(&ci.prefill_rate),
            "cached_rate": rate_ci(&ci.cached_rate),
            "attention_rate": rate_ci(&ci.attention_rate),
            "decode_rate": rate_ci(&ci.decode_rate),
        },
        "overhead_distribution": dist_json(&m.overhead_distribution),
        "launch_2024_median_abs_error_s": s4(m.launch_2024_median_abs_error_s),
        "residual_quantiles_s": m.residual_quantiles_s.iter().map(|&x| s4(x)).collect::<Vec<_>>(),
        "requests_total": m.requests_total,
        "sessions": m.sessions,
        "cache_read_requests": m.cache_read_requests,
        "decode_requests": m.decode_requests,
        "bootstrap": {
            "unit": m.bootstrap_unit,
            "resamples": cal.settings.resamples,
            "seed": cal.settings.seed,
        },
        "held_out": m.held_out.map(|h| json!({
            "folds": h.folds,
            "median_abs_error_s": {
                "median_fit": s4(h.median_fit_s),
                "least_squares": s4(h.least_squares_s),
                "launch_2024": s4(h.launch_2024_s),
            },
            "exceed": exceed_json(&h.exceed),
        })),
        "validation": m.validation.map(|v| json!({
            "requests": v.requests,
            "median_abs_error_s": s4(v.median_abs_error_s),
            "exceed": exceed_json(&v.exceed),
        })),
        "not_identifiable": not_identifiable,
        "draws": m.draws.iter().map(|d| json!({
            "overhead_distribution": dist_json(&d.overhead),
            "prefill_rate": d.prefill_rate.map(r1),
            "cached_rate": d.cached_rate.map(r1),
            "attention_rate": d.attention_rate.map(r1),
        })).collect::<Vec<_>>(),
    })
}

/// A number for people: 3 significant digits below 1,000, else whole with thousands commas.
fn num(x: f64) -> String {
    if !x.is_finite() {
        "inf".into()
    } else if x.abs() >= 1000.0 {
        thousands(x.round() as u64)
    } else {
        crate::numfmt::num(x)
    }
}

/// `value [lo, hi]`, `-` when the value is not identifiable; an unbounded end is `inf`.
fn with_interval(value: Option<f64>, ci: Option<&Interval>) -> String {
    let Some(v) = value else { return "-".into() };
    match ci {
        Some(i) => format!("{} [{}, {}]", num(v), num(i.lo), i.hi.map_or("inf".into(), num)),
        None => num(v),
    }
}

/// The table for people, with the notes that make it honest; `validated` names the
/// `--validate` files when there were any.
pub fn text(cal: &Calibration, inputs: &str, validated: Option<&str>) -> String {
    let header = [
        "model",
        "preset",
        "requests",
        "overhead s",
        "p99 s",
        "prefill tok/s",
        "cached tok/s",
        "attention tok²/s",
        "decode tok/s",
        "median abs error s",
        "2024 figures s",
    ];
    let rows: Vec<Vec<String>> = cal
        .models
        .iter()
        .map(|m| {
            vec![
                m.model.clone(),
                m.preset.unwrap_or("-").to_string(),
                m.requests.to_string(),
                with_interval(Some(m.overhead_s), Some(&m.ci95.overhead_s)),
                num(m.overhead_distribution.quantile(0.99)),
                with_interval(m.prefill_rate, m.ci95.prefill_rate.as_ref()),
                with_interval(m.cached_rate, m.ci95.cached_rate.as_ref()),
                with_interval(m.attention_rate, m.ci95.attention_rate.as_ref()),
                with_interval(m.decode_rate, m.ci95.decode_rate.as_ref()),
                num(m.median_abs_error_s),
                num(m.launch_2024_median_abs_error_s),
            ]
        })
        .collect();
    let s = &cal.settings;
    let mut out = format!(
        "Latency per model from {inputs}: ttft = overhead + prefilled / prefill + cache read / cached \
         [+ prefilled x context / attention]\n\
         (median regression, coefficients >= 0; [95% interval]: bootstrap over sessions, {} resamples, seed {}; \
         - = not identifiable; p99: of the overhead distribution, fitted tail above p90)\n\n",
        s.resamples, s.seed
    );
    out += &table(&header, &rows);
    out += &notes(cal);
    if let Some(files) = validated {
        out += &validation_table(cal, files);
    }
    out
}

/// The backtest for people: per model, requests, median abs error and the shares above the
/// predicted quantiles (a model with no request in the files: `-`).
fn validation_table(cal: &Calibration, files: &str) -> String {
    let header = ["model", "requests", "median abs error s", "> p50", "> p90", "> p95", "> p99"];
    let rows: Vec<Vec<String>> = cal
        .models
        .iter()
        .map(|m| match m.validation {
            Some(v) => [m.model.clone(), v.requests.to_string(), num(v.median_abs_error_s)]
                .into_iter()
                .chain(v.exceed.iter().map(|&e| pct(e)))
                .collect(),
            None => [m.model.clone(), "0".into()]
                .into_iter()
                .chain(std::iter::repeat_n("-".to_string(), 5))
                .collect(),
        })
        .collect();
    format!(
        "\nBacktest on {files}: share of measured TTFTs above the predicted quantile (a calibrated \
         model: about 50%, 10%, 5%, 1%)\n\n{}",
        table(&header, &rows)
    )
}

/// `50%, 10%, 5%, 1%`-style exceedance for notes: `> p50 49.0%, > p90 ...`.
fn exceed_text(e: &Exceed) -> String {
    let parts: Vec<String> = EXCEED_PROBS
        .iter()
        .zip(e)
        .map(|(p, x)| format!("> p{} {}", (p * 100.0).round(), pct(*x)))
        .collect();
    parts.join(", ")
}

fn notes(cal: &Calibration) -> String {
    let mut out = String::new();
    for m in &cal.models {
        for (param, why) in &m.not_identifiable {
            let _ = writeln!(out, "{}: {param} not identifiable: {why}", m.model);
        }
        if m.bootstrap_unit == "request" {
            let _ = writeln!(
                out,
                "{}: only {} session(s): the bootstrap resamples requests",
                m.model, m.sessions
            );
        }
        let d = &m.overhead_distribution;
        let _ = writeln!(
            out,
            "{}: overhead tail above p90 ({} s): generalized Pareto scale {} s, shape {}; p99 {} s, p99.9 {} s",
            m.model,
            num(d.body[d.body.len() - 1]),
            num(d.scale),
            num(d.shape),
            num(d.quantile(0.99)),
            num(d.quantile(0.999))
        );
        if let Some(h) = m.held_out {
            let _ = writeln!(
                out,
                "{}: held out ({}-fold by session), median abs error: median fit {} s, least squares {} s, launch-2024 {} s; {}",
                m.model,
                h.folds,
                num(h.median_fit_s),
                num(h.least_squares_s),
                num(h.launch_2024_s),
                exceed_text(&h.exceed)
            );
        }
        if !m.identified {
            let _ = writeln!(
                out,
                "{}: not identified (fewer than {} requests or {} sessions, or an unbounded prefill interval)",
                m.model,
                super::estimate::IDENTIFIED_MIN_REQUESTS,
                super::estimate::IDENTIFIED_MIN_SESSIONS
            );
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

/// The simulator's latency file: a comment header, then `[latency."KEY"]` per model, keyed by
/// the preset name when known (and unique), else the model id. Every value is a distribution
/// that `dist::parse_dist_in` reads: durations with a unit, rates as plain numbers.
pub fn latency_toml(cal: &Calibration, command: &str, inputs: &str) -> String {
    let mut out = String::new();
    let _ =
        writeln!(out, "# Per-model latency fitted by `prefixsim calibrate` (docs/calibrate.md).");
    let _ = writeln!(out, "# command: {command}");
    let _ = writeln!(out, "# input: {inputs}");
    let _ = writeln!(
        out,
        "# ttft = overhead + (uncached + cache_write) / prefill_rate + cache_read / cached_rate\n\
         # (+ (uncached + cache_write) x context / attention_rate where identified);\n\
         # median regression, [95% intervals] from a bootstrap over sessions ({} resamples, seed {}).\n\
         # overhead = the fitted overhead plus every residual: its quantiles at 0, 5%, ..., 90%\n\
         # (clamped at 0), above p90 a generalized Pareto tail fitted to the exceedances\n\
         # (probability-weighted moments), truncated at the SDKs' 600 s request timeout.",
        cal.settings.resamples, cal.settings.seed
    );
    for m in &cal.models {
        out.push('\n');
        out += &model_table(m, &table_key(m, cal));
    }
    out
}

/// The preset name when it names this model alone, else the model id.
fn table_key(m: &ModelFit, cal: &Calibration) -> String {
    match m.preset {
        Some(p) if cal.models.iter().filter(|o| o.preset == Some(p)).count() == 1 => p.to_string(),
        _ => m.model.clone(),
    }
}

fn model_table(m: &ModelFit, key: &str) -> String {
    let mut out = String::new();
    let quoted = serde_json::to_string(key).expect("a string serializes");
    let _ = writeln!(out, "[latency.{quoted}]");
    let _ = writeln!(
        out,
        "# model {}: {} requests with a measured TTFT in {} sessions; median abs error {} s \
         (launch-2024 figures: {} s)",
        m.model.replace(char::is_control, "?"),
        m.requests,
        m.sessions,
        num(m.median_abs_error_s),
        num(m.launch_2024_median_abs_error_s)
    );
    let _ = writeln!(
        out,
        "# overhead {} s; prefill {} tok/s; cached {} tok/s; attention {} tok²/s; decode {} tok/s",
        with_interval(Some(m.overhead_s), Some(&m.ci95.overhead_s)),
        with_interval(m.prefill_rate, m.ci95.prefill_rate.as_ref()),
        with_interval(m.cached_rate, m.ci95.cached_rate.as_ref()),
        with_interval(m.attention_rate, m.ci95.attention_rate.as_ref()),
        with_interval(m.decode_rate, m.ci95.decode_rate.as_ref()),
    );
    let _ = writeln!(out, "overhead = \"{}\"", overhead_dist(&m.overhead_distribution));
    for (key, value) in [
        ("prefill_rate", m.prefill_rate),
        ("cached_rate", m.cached_rate),
        ("attention_rate", m.attention_rate),
        ("decode_rate", m.decode_rate),
    ] {
        match value {
            Some(v) => {
                let _ = writeln!(out, "{key} = \"const({})\"", rate_text(v));
            }
            None => {
                let why = m.not_identifiable.iter().find(|(k, _)| *k == key).map_or("", |(_, w)| w);
                let _ = writeln!(out, "# {key}: not identifiable from this data ({why}); omitted");
            }
        }
    }
    out
}

/// `spliced([0.912s, ...], p_tail=0.9, scale=0.61s, shape=0.21, max=600s)`: the numbers of
/// the JSON's `overhead_distribution`, seconds to 0.1 ms.
pub fn overhead_dist(d: &Spliced) -> String {
    let secs = |x: f64| format!("{}s", s4(x));
    let body: Vec<String> = d.body.iter().map(|&x| secs(x)).collect();
    format!(
        "spliced([{}], p_tail={}, scale={}, shape={}, max={})",
        body.join(", "),
        d.p_tail,
        secs(d.scale),
        share(d.shape),
        secs(d.max)
    )
}

/// A rate as plain text: whole tokens/s from 100 up, else one decimal.
fn rate_text(v: f64) -> String {
    match v >= 100.0 {
        true => format!("{}", v.round()),
        false => format!("{v:.1}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::estimate::{Ci95, Draw, Interval, Settings};
    use crate::calibrate::fit::Coefs;
    use crate::config::parse_dist_in;
    use crate::dist::{Dist, Quantity};

    fn overhead() -> Spliced {
        // Body from 0 s: the lowest quantiles of a fit whose residuals reach below -overhead.
        let body = (0..19).map(|k| 0.05 * k as f64).collect();
        Spliced::new(body, 0.9, 0.61234, 0.21, 600.0).unwrap()
    }

    fn fit(cached_rate: Option<f64>) -> ModelFit {
        let i = Interval { lo: 1.0, hi: Some(2.0) };
        let coefs = Coefs {
            overhead_s: 0.3,
            s_per_prefill: Some(1.0 / 41_234.56),
            s_per_cached: cached_rate.map(|r| 1.0 / r),
            s_per_attention: None,
        };
        ModelFit {
            model: "claude-sonnet-4-5-20250929".into(),
            preset: Some("claude-sonnet-4.5"),
            requests: 10,
            requests_total: 12,
            sessions: 3,
            cache_read_requests: 5,
            overhead_s: 0.3,
            prefill_rate: Some(41_234.56),
            cached_rate,
            attention_rate: None,
            decode_rate: Some(55.55),
            decode_requests: 4,
            coefs,
            overhead_distribution: overhead(),
            identified: false,
            draws: vec![Draw {
                overhead: overhead(),
                prefill_rate: Some(40_000.0),
                cached_rate: None,
                attention_rate: None,
            }],
            validation: None,
            median_abs_error_s: 0.2,
            launch_2024_median_abs_error_s: 0.5,
            ci95: Ci95 {
                overhead_s: i,
                prefill_rate: Some(Interval { lo: 30_000.0, hi: None }),
                cached_rate: cached_rate.map(|_| i),
                attention_rate: Some(Interval { lo: 1e9, hi: None }),
                decode_rate: Some(i),
            },
            bootstrap_unit: "session",
            // Residuals from -0.5 s: the lowest overhead draws clamp at 0.
            residual_quantiles_s: (0..20).map(|k| -0.5 + 0.05 * k as f64).collect(),
            held_out: None,
            not_identifiable: vec![("cached_rate", "no request read from the cache".into())],
            points: vec![],
        }
    }

    #[test]
    fn every_latency_value_parses_as_a_distribution() {
        let cal =
            Calibration { models: vec![fit(None)], skipped: vec![], settings: Settings::default() };
        let text = latency_toml(&cal, "prefixsim calibrate x", "x (usage-log)");
        let table: toml::Table = text.parse().unwrap();
        let t = table["latency"]["claude-sonnet-4.5"].as_table().unwrap();
        let mut keys: Vec<&String> = t.keys().collect();
        keys.sort();
        assert_eq!(keys, ["decode_rate", "overhead", "prefill_rate"], "cached_rate omitted");
        let d = |k: &str, q| parse_dist_in(t[k].as_str().unwrap(), q, None).unwrap();
        let Dist::Spliced(o) = d("overhead", Quantity::Duration) else { panic!("spliced") };
        // In microseconds, to 0.1 ms.
        assert_eq!((o.body.len(), o.body[0], o.body[18]), (19, 0.0, 900_000.0));
        assert_eq!((o.p_tail, o.scale, o.shape, o.max), (0.9, 612_300.0, 0.21, 600e6));
        assert_eq!(d("prefill_rate", Quantity::Number), Dist::Const(41_235.0));
        assert_eq!(d("decode_rate", Quantity::Number), Dist::Const(55.5));
        assert!(text.contains("# cached_rate: not identifiable from this data (no request read"));
    }

    #[test]
    fn json_nulls_what_is_not_identified_and_unbounded_ends() {
        let cal =
            Calibration { models: vec![fit(None)], skipped: vec![], settings: Settings::default() };
        let v: serde_json::Value = serde_json::from_str(&json(&cal)).unwrap();
        let m = &v["models"][0];
        assert!(m["cached_rate"].is_null() && m["ci95"]["cached_rate"].is_null());
        assert_eq!(m["ci95"]["prefill_rate"], serde_json::json!([30000.0, null]));
        assert_eq!(m["prefill_rate"], 41234.6);
        assert!(m["attention_rate"].is_null());
        assert_eq!(m["ci95"]["attention_rate"], serde_json::json!([1e9, null]));
        let d = &m["overhead_distribution"];
        assert_eq!(d["body_s"].as_array().unwrap().len(), 19);
        assert_eq!(
            (&d["p_tail"], &d["scale_s"], &d["shape"], &d["max_s"]),
            (&0.9.into(), &0.6123.into(), &0.21.into(), &600.0.into())
        );
        assert_eq!(m["draws"][0]["prefill_rate"], 40000.0);
        assert!(m["draws"][0]["cached_rate"].is_null() && m["validation"].is_null());
        assert_eq!(m["draws"][0]["overhead_distribution"], m["overhead_distribution"]);
    }
}
