//! The report's "Assumptions" section: what produced its numbers. Model and prices, latency
//! (the calibrated fit and its data, or the named preset, recognised from the resolved
//! parameters), cache policy, TTLs, rate limits, and the named assumptions: the simulator's
//! own undocumented-behaviour keys (docs/model.md, docs/providers.md) for the policies run,
//! plus the keys the experiment file lists in `[report] assumptions`.

use super::doc::Block;
use super::words::{and_list, json_text, usd};
use crate::config::latency_origin;
use crate::config::latency_presets::{self, LatencyPreset};
use crate::config::{dist_label, ExperimentSpec, LatencyParams, Policy, Quantity};
use crate::results::Results;

/// A key the simulator needs but no provider documents, the policies it applies to (empty:
/// every policy), and why it is an assumption.
struct Named {
    key: &'static str,
    policies: &'static [&'static str],
    why: &'static str,
}

const NAMED: [Named; 14] = [
    Named { key: "latency.ready_delay", policies: &[], why: "an entry is readable this long after the writer's first token; no delay is published (docs/model.md)" },
    Named { key: "workload.parent_turn_every", policies: &[], why: "the parent conversation during the fan-out; `0s`: frozen (docs/model.md)" },
    Named { key: "openai.overflow_probability", policies: &["openai"], why: "which requests past ~15 a minute overflow; not published, a midpoint: sweep it (docs/providers.md)" },
    Named { key: "openai.overflow_warm_probability", policies: &["openai"], why: "whether an overflow machine holds the prefix; not published (docs/providers.md)" },
    Named { key: "openai.machines", policies: &["openai"], why: "machines a prefix can overflow to; not published (docs/providers.md)" },
    Named { key: "openai.overflow_window", policies: &["openai"], why: "the window the ~15 requests a minute are counted over (docs/providers.md)" },
    Named { key: "openai.in_memory_idle", policies: &["openai"], why: "the low end of the documented 5-10 minutes (docs/providers.md)" },
    Named { key: "gemini.implicit_hit_probability", policies: &["gemini"], why: "not published, a midpoint: sweep it (docs/providers.md)" },
    Named { key: "gemini.implicit_ttl", policies: &["gemini"], why: "nothing shorter than 24 h is documented (docs/providers.md)" },
    Named { key: "server.prefill_tokens_per_s", policies: &["vllm", "sglang"], why: "inferred from compute at 40% utilization (docs/providers.md)" },
    Named { key: "server.step_overhead", policies: &["vllm", "sglang"], why: "the fixed cost of a scheduler step (docs/providers.md)" },
    Named { key: "server.kv_capacity_tokens", policies: &["vllm", "sglang"], why: "inferred from GPU memory (docs/providers.md)" },
    Named { key: "server.router", policies: &["vllm", "sglang"], why: "what a plain load balancer does (docs/providers.md)" },
    Named { key: "server.gpu_usd_per_hour", policies: &["vllm", "sglang"], why: "H100 on-demand prices in 2026 (docs/providers.md)" },
];

/// The section's blocks; `table` is the resolved experiment's TOML (manifest.json).
pub fn section(r: &Results, exp: &ExperimentSpec, table: &toml::Table) -> Vec<Block> {
    let swept = |key: &str| -> Option<String> {
        let m = r.manifest.as_ref()?;
        let a = m.axes.iter().find(|a| a.key == key)?;
        let vals: Vec<String> = a.values.iter().map(json_text).collect();
        Some(format!("swept: {}", vals.join(", ")))
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut add = |k: &str, v: String| rows.push(vec![k.to_string(), v]);
    add("model", swept("model").unwrap_or_else(|| model_text(exp)));
    let borrowed: Vec<String> = borrowed_models(r, exp).iter().map(|b| b.line()).collect();
    let latency = match swept("model") {
        Some(_) if borrowed.is_empty() => {
            format!("{}; each swept model its own fit of that preset", latency_text(exp))
        }
        Some(_) => format!(
            "{}; each swept model its own fit of that preset, borrowed for some: {}",
            latency_text(exp),
            borrowed.join("; ")
        ),
        None => latency_text(exp),
    };
    add("latency", swept("latency.preset").unwrap_or(latency));
    add(
        "cache policy",
        swept("cache.policy").unwrap_or_else(|| format!("`{}`", exp.cache.policy.name())),
    );
    let ttl = match (swept("cache.ttl"), swept("cache.parent_ttl")) {
        (Some(a), Some(p)) => format!("the agents' {a}; the parent's {p}"),
        (Some(a), None) => format!("the agents' {a}"),
        (None, Some(p)) => format!("{}; the parent's {p}", ttl_text(exp)),
        (None, None) => ttl_text(exp),
    };
    add("TTL", ttl);
    add("rate limits", rate_text(exp));
    add(
        "529 overloaded",
        match &exp.overload {
            None => "never (no `[overload]`)".into(),
            Some(o) => {
                format!("probability {} per attempt, {} retries", o.probability, o.max_retries)
            }
        },
    );
    let mut out = vec![Block::Table(vec!["".into(), "this experiment".into()], rows)];
    let named = named_rows(r, exp, table);
    if !named.is_empty() {
        out.push(Block::Para(
            "Named assumptions: values nobody documents that the numbers depend on (each \
             overridable; sweep it to see how much)."
                .into(),
        ));
        let head = ["key", "value", "why an assumption"].map(String::from).into();
        out.push(Block::Table(head, named));
    }
    out
}

/// The models the results ran (the swept `model` values, else the experiment's) whose
/// latency is a fit made on another model (`config::latency_origin`), each once.
pub fn borrowed_models(r: &Results, exp: &ExperimentSpec) -> Vec<latency_origin::Borrowed> {
    let axis = r.manifest.as_ref().and_then(|m| m.axes.iter().find(|a| a.key == "model"));
    let models: Vec<String> = match axis {
        Some(a) => a.values.iter().map(json_text).collect(),
        None => vec![exp.model.name.clone()],
    };
    let mut out: Vec<latency_origin::Borrowed> = Vec::new();
    for m in &models {
        if let Some(b) = latency_origin::borrowed_for(exp, m) {
            if !out.contains(&b) {
                out.push(b);
            }
        }
    }
    out
}

fn model_text(exp: &ExperimentSpec) -> String {
    let m = &exp.model;
    let ttl1h = if m.write_1h_multiplier > 0.0 {
        format!(" ({}x for 1 h)", m.write_1h_multiplier)
    } else {
        String::new()
    };
    format!(
        "`{}`: {} / {} per million input / output tokens; cache writes {}x the input price{ttl1h}, \
         reads {}x; prefixes under {} tokens are not cached",
        m.name,
        usd(m.input_usd_per_mtok),
        usd(m.output_usd_per_mtok),
        m.write_5m_multiplier,
        m.read_multiplier,
        m.min_cacheable_tokens
    )
}

/// The named preset whose parameters these are (and the keys that differ from it).
pub fn latency_text(exp: &ExperimentSpec) -> String {
    let model = &exp.model.name;
    let best = [LatencyPreset::Calibrated, LatencyPreset::Launch2024]
        .into_iter()
        .filter_map(|p| Some((p, differing(&exp.latency, &latency_presets::params(model, p)?))))
        .min_by_key(|(_, d)| d.len());
    let Some((preset, differ)) = best else {
        return "given in `[latency]` (no preset for this model)".into();
    };
    let mut text = match preset {
        LatencyPreset::Calibrated => {
            match (latency_origin::borrowed(exp), latency_presets::fit_for(model)) {
                (Some(b), Some((fit, _))) => format!(
                    "`calibrated`: {}, fit to {} measured requests of {} (data/claude-code-ttft)",
                    b.phrase(),
                    fit.requests,
                    fit.fitted_on
                ),
                (Some(b), None) => format!("`calibrated`: {}", b.phrase()),
                (None, Some((_, source))) => format!("`calibrated`: {source}"),
                (None, None) => "`calibrated`".into(),
            }
        }
        LatencyPreset::Launch2024 => {
            "`launch-2024`: 500 ms + 9,100 tok/s, Anthropic's prompt-caching launch post (2024)"
                .into()
        }
    };
    if !differ.is_empty() {
        let keys: Vec<String> = differ.iter().map(|k| format!("`latency.{k}`")).collect();
        text.push_str(&format!("; {} set by the file", and_list(&keys)));
    }
    text
}

fn differing(a: &LatencyParams, b: &LatencyParams) -> Vec<&'static str> {
    let (d, n) = (Quantity::Duration, Quantity::Number);
    let pairs = [
        ("overhead", dist_label(&a.overhead_us, d) == dist_label(&b.overhead_us, d)),
        ("prefill_rate", dist_label(&a.prefill_rate, n) == dist_label(&b.prefill_rate, n)),
        ("cached_rate", dist_label(&a.cached_rate, n) == dist_label(&b.cached_rate, n)),
        ("decode_rate", dist_label(&a.decode_rate, n) == dist_label(&b.decode_rate, n)),
        ("ready_delay", dist_label(&a.ready_delay_us, d) == dist_label(&b.ready_delay_us, d)),
        ("attention_rate", dist_label(&a.attention_rate, n) == dist_label(&b.attention_rate, n)),
    ];
    pairs.into_iter().filter(|p| !p.1).map(|p| p.0).collect()
}

fn ttl_text(exp: &ExperimentSpec) -> String {
    let c = &exp.cache;
    let mut s = format!("the agents' {}", c.ttl.words());
    if let Some(p) = c.parent_ttl {
        s.push_str(&format!(", the parent's {}", p.words()));
    }
    if matches!(c.policy, Policy::Vllm | Policy::Sglang) {
        s = "none: a server keeps blocks until it needs the memory".into();
    }
    s
}

fn rate_text(exp: &ExperimentSpec) -> String {
    match &exp.rate_limits {
        None => "none (no `[rate_limits]`: unlimited)".into(),
        Some(l) => format!(
            "{} requests, {} input tokens, {} output tokens a minute{}",
            l.rpm,
            l.itpm,
            l.otpm,
            if l.cache_reads_count { "; cache reads count toward input" } else { "" }
        ),
    }
}

/// The policies the experiment runs: its own and any swept `cache.policy` values.
fn policies(r: &Results, exp: &ExperimentSpec) -> Vec<String> {
    let mut out = vec![exp.cache.policy.name().to_string()];
    let swept = r.manifest.as_ref().and_then(|m| m.axes.iter().find(|a| a.key == "cache.policy"));
    for v in swept.map(|a| a.values.clone()).unwrap_or_default() {
        let v = json_text(&v);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn named_rows(r: &Results, exp: &ExperimentSpec, table: &toml::Table) -> Vec<Vec<String>> {
    let own = exp.cache.policy.name();
    // The parent's pace only matters to forks (a sub-agent shares no parent history).
    let forks = exp.workload.kind.name().starts_with("fork")
        || r.manifest.iter().flat_map(|m| &m.axes).any(|a| a.key == "workload.kind");
    let run = policies(r, exp);
    let mut rows = Vec::new();
    for n in &NAMED {
        let under: Vec<&String> = match n.policies.is_empty() {
            true if forks || !n.key.contains("parent") => run.iter().take(1).collect(),
            true => Vec::new(),
            false => run.iter().filter(|p| n.policies.contains(&p.as_str())).collect(),
        };
        let Some(first) = under.first() else { continue };
        let value = if first.as_str() == own {
            lookup(table, n.key)
        } else {
            let names: Vec<String> = under.iter().map(|p| format!("`{p}`")).collect();
            default_under(first, n.key)
                .map(|v| format!("{v} (the default under {})", and_list(&names)))
        };
        rows.push(vec![
            format!("`{}`", n.key),
            value.unwrap_or_else(|| "–".into()),
            n.why.to_string(),
        ]);
    }
    for key in &exp.report.assumptions {
        rows.push(vec![
            format!("`{key}`"),
            lookup(table, key).unwrap_or_else(|| "–".into()),
            "the experiment file makes it an assumption".into(),
        ]);
    }
    rows
}

/// The value at dotted `key` of the resolved TOML, as TOML text in a code span.
fn lookup(table: &toml::Table, key: &str) -> Option<String> {
    crate::config::lookup(table, key).map(|v| format!("`{v}`"))
}

/// The value of `key` in a minimal experiment under `policy` (its default there).
fn default_under(policy: &str, key: &str) -> Option<String> {
    let src = format!("[cache]\npolicy = \"{policy}\"\n");
    let t = crate::config::parse_table(&src, "<default>").ok()?;
    let e = crate::config::resolve(&t, "<default>").ok()?;
    let rendered = crate::config::parse_table(&crate::config::render(&e), "<default>").ok()?;
    lookup(&rendered, key)
}
