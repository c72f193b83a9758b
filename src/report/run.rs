//! A run's results as typed values (`RunSummary`, one `StrategyResult` per strategy) and the
//! two ways `prefixsim run` prints them: the comparison table and the JSON document (which is
//! `RunSummary` serialized: the field names below are the JSON schema). Built from the
//! executor's outcomes (`exec::StrategyOutcome`) and the model's notes, which the caller
//! passes in: this module knows nothing of the model.

use serde::Serialize;

use crate::config::ExperimentSpec;
use crate::exec::StrategyOutcome;
use crate::metrics::EXTRA_NAMES;

/// A run of every strategy of one experiment: means over replications, latency percentiles
/// from the histograms merged over all agents and replications.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The experiment seed (`--seed` replays it).
    pub seed: u64,
    /// The experiment's name.
    pub name: String,
    /// The question the experiment asks (empty when it states none).
    pub question: String,
    /// The model preset (or the name the experiment gives its own prices).
    pub model: String,
    /// The cache policy (`anthropic`, `every-block`, `openai`, `gemini`, `vllm`, `sglang`).
    pub policy: String,
    /// Replications of every strategy.
    pub replications: u32,
    /// Only when the model's latency is a fit made on another model
    /// (`config::latency_origin`): which, and why, e.g. `claude-sonnet-4.5's calibrated fit (no
    /// measurements of gpt-5.4)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_borrowed: Option<String>,
    /// One per strategy, in the experiment's order.
    pub results: Vec<StrategyResult>,
    /// The documented rules that limited a strategy or kind (`model::notes`); absent if none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Tokens per replication, by how they were billed (means over replications).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tokens {
    /// Input tokens read from the cache.
    pub cache_read: f64,
    /// Input tokens written to the cache.
    pub cache_write: f64,
    /// Input tokens neither read nor written.
    pub uncached: f64,
    /// Output tokens.
    pub output: f64,
}

/// A latency distribution's ladder, in seconds, pooled over every agent (or request) of every
/// replication: not the mean of each replication's own percentile (`launch_wait_p99_s_mean`
/// in summary.csv). `min` and `max` are exact.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    /// The least value.
    pub min: f64,
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
    /// The greatest value.
    pub max: f64,
}

impl Percentiles {
    fn of(a: &crate::results::Aggregate, name: &str) -> Percentiles {
        let i = crate::metrics::LATENCY_NAMES.iter().position(|n| *n == name).unwrap_or(0);
        let x = a.ladder_s(i);
        Percentiles { min: a.min_s(i), p50: x[0], p90: x[1], p99: x[2], p999: x[3], max: x[4] }
    }
}

/// One strategy's results: costs in USD and durations in seconds, per replication (means).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrategyResult {
    /// The strategy's label (`eager`, `wait_first(max_wait=5s)`, ...).
    pub strategy: String,
    /// Cost per replication, USD.
    pub cost_usd: f64,
    /// Half-width of the 95% confidence interval of `cost_usd`.
    pub cost_usd_ci95: f64,
    /// Cost over the `eager` strategy's (absent when the run has no `eager`, or it cost 0).
    pub cost_relative_to_eager: Option<f64>,
    /// Cost over what the same requests cost with no cache.
    pub cost_relative_to_uncached: f64,
    /// Share of input tokens read from the cache.
    pub hit_rate: f64,
    /// Blocks written while an equal entry was still pending (docs/cache.md).
    pub redundant_writes: f64,
    /// Requests sent.
    pub requests: f64,
    /// Tokens, by how they were billed.
    pub tokens: Tokens,
    /// Time from an agent's launch to its first request's send.
    pub launch_wait_pooled_s: Percentiles,
    /// Time to first token of every request.
    pub ttft_pooled_s: Percentiles,
    /// Time from an agent's launch to its last response's end.
    pub completion_pooled_s: Percentiles,
    /// Time from the first launch to the last response's end.
    pub makespan_s: f64,
    /// Half-width of the 95% confidence interval of `makespan_s`.
    pub makespan_s_ci95: f64,
    /// Agents finished per minute of makespan.
    pub throughput_agents_per_min: f64,
    /// Tokens (input and output) per minute of makespan.
    pub throughput_tokens_per_min: f64,
    /// 429 responses (rate limits).
    pub rate_limited: f64,
    /// Time requests waited for the rate limiter, summed over requests.
    pub throttled_s: f64,
    /// Only when the parent advances (`workload.parent_turn_every` > 0): its own requests and
    /// cost per replication, not in `cost_usd`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_requests: Option<f64>,
    /// The advancing parent's own cost per replication, USD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_cost_usd: Option<f64>,
    /// Only with `[overload]`: 529s received and agents that gave up, per replication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overloaded: Option<f64>,
    /// Agents that gave up after a 529.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_agents: Option<f64>,
    /// Only with `cache.miss_probability` > 0: lookups that missed a readable entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolated_misses: Option<f64>,
    /// Only with `model_params.long_context`: requests billed at long-context prices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_context_requests: Option<f64>,
}

/// Which of `EXTRA_NAMES` a run of `exp` reports (its feature is on).
fn shown_extras(exp: &ExperimentSpec) -> [bool; EXTRA_NAMES.len()] {
    let advancing = exp.workload.parent_turn_every_us > 0;
    let overload = exp.overload.is_some();
    [
        advancing,
        advancing,
        overload,
        overload,
        exp.cache.miss_probability > 0.0,
        exp.model.use_long_context,
    ]
}

impl RunSummary {
    /// The typed results of `outcomes`, a run of `exp`, with the model's `notes` on it.
    pub fn new(
        exp: &ExperimentSpec,
        outcomes: &[StrategyOutcome],
        notes: Vec<String>,
    ) -> RunSummary {
        let eager =
            outcomes.iter().find(|o| o.label == "eager").map(|o| o.aggregate.stat("cost_usd").mean);
        let shown = shown_extras(exp);
        RunSummary {
            seed: exp.seed,
            name: exp.name.clone(),
            question: exp.question.clone(),
            model: exp.model.name.clone(),
            policy: exp.cache.policy.name().to_string(),
            replications: exp.replications,
            latency_borrowed: crate::config::latency_origin::phrase(exp),
            results: outcomes.iter().map(|o| StrategyResult::new(o, eager, &shown)).collect(),
            notes,
        }
    }

    /// The result of the strategy labelled `label`.
    pub fn strategy(&self, label: &str) -> Option<&StrategyResult> {
        self.results.iter().find(|r| r.strategy == label)
    }

    /// The JSON document `prefixsim run --json` prints (pretty, with a final newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("results serialise");
        s.push('\n');
        s
    }
}

impl StrategyResult {
    fn new(
        o: &StrategyOutcome,
        eager: Option<f64>,
        shown: &[bool; EXTRA_NAMES.len()],
    ) -> StrategyResult {
        let a = &o.aggregate;
        let m = |name: &str| a.stat(name).mean;
        let extra = |i: usize| shown[i].then(|| o.extras[i].stat().mean);
        StrategyResult {
            strategy: o.label.clone(),
            cost_usd: m("cost_usd"),
            cost_usd_ci95: a.stat("cost_usd").ci95,
            cost_relative_to_eager: eager.filter(|e| *e > 0.0).map(|e| m("cost_usd") / e),
            cost_relative_to_uncached: m("cost_relative"),
            hit_rate: m("hit_rate"),
            redundant_writes: m("redundant_writes"),
            requests: m("requests"),
            tokens: Tokens {
                cache_read: m("cache_read"),
                cache_write: m("cache_write"),
                uncached: m("uncached"),
                output: m("output"),
            },
            launch_wait_pooled_s: Percentiles::of(a, "launch_wait"),
            ttft_pooled_s: Percentiles::of(a, "ttft"),
            completion_pooled_s: Percentiles::of(a, "completion"),
            makespan_s: m("makespan_s"),
            makespan_s_ci95: a.stat("makespan_s").ci95,
            throughput_agents_per_min: m("throughput_agents_per_min"),
            throughput_tokens_per_min: m("throughput_tokens_per_min"),
            rate_limited: m("rate_limited"),
            throttled_s: m("throttled_s"),
            parent_requests: extra(0),
            parent_cost_usd: extra(1),
            overloaded: extra(2),
            failed_agents: extra(3),
            isolated_misses: extra(4),
            long_context_requests: extra(5),
        }
    }
}

/// The seed first, then the comparison table, the model's `notes` and the ladders; under the
/// question, which `overrides` (`--set KEY=VALUE` as typed) changed the experiment the
/// question was written for.
#[cfg(any(feature = "cli", feature = "python"))]
pub fn table_text(
    exp: &ExperimentSpec,
    outcomes: &[StrategyOutcome],
    notes: &[String],
    overrides: &[String],
) -> String {
    use super::table;
    let rows: Vec<table::Row<'_>> =
        outcomes.iter().map(|o| table::Row { label: &o.label, aggregate: &o.aggregate }).collect();
    let mut s = format!("seed: {}\n", exp.seed);
    s.push_str(&format!(
        "{}: {} x {} agents, {} replications, model {}, policy {}\n",
        exp.name,
        crate::config::kind_label(&exp.workload.kind),
        exp.workload.agents,
        exp.replications,
        exp.model.name,
        exp.cache.policy.name()
    ));
    if let Some(b) = crate::config::latency_origin::borrowed(exp) {
        s.push_str(&format!("{}\n", b.line()));
    }
    if !exp.question.is_empty() {
        s.push_str(&format!("question: {}\n", exp.question));
    }
    if !overrides.is_empty() {
        let sets: Vec<String> = overrides.iter().map(|o| format!("--set {o}")).collect();
        s.push_str(&format!(
            "overridden: {} (the question is the file's; these values replace its own)\n",
            sets.join(" ")
        ));
    }
    s.push('\n');
    s.push_str(&table::comparison_table(&rows));
    s.push_str(
        "\nmeans over replications (cost: ± 95% CI); redundant entries: cache entries (not agents) \
         written over a pending equal entry; *_pooled: percentiles over all agents of all \
         replications together; rate-limited: 429 responses per run\n",
    );
    if exp.workload.parent_turn_every_us > 0 {
        s.push_str("the parent's own turns (not in the cost above):");
        for o in outcomes {
            let [requests, cost] = [0, 1].map(|i| o.extras[i].stat().mean);
            s.push_str(&format!(" {}: {requests:.1} requests, ${cost:.4};", o.label));
        }
        s.pop();
        s.push('\n');
    }
    for (i, what) in [
        (2, "529 overloaded responses"),
        (3, "agents that gave up after a 529"),
        (4, "isolated cache misses"),
        (5, "requests at long-context prices"),
    ] {
        if shown_extras(exp)[i] {
            s.push_str(&format!("{what} per replication:"));
            for o in outcomes {
                s.push_str(&format!(" {}: {:.2};", o.label, o.extras[i].stat().mean));
            }
            s.pop();
            s.push('\n');
        }
    }
    for note in notes {
        s.push_str(&format!("note: {note}\n"));
    }
    s.push('\n');
    s.push_str(&table::ladders(&rows));
    s
}
