//! A deterministic fake simulator for testing the sweep machinery without the model: it knows
//! a handful of keys (others are refused, like the real resolver) and draws its numbers from
//! `rng::stream(seed, [replication, strategy])`, so points share random numbers.

use super::{Description, ResolveError, Runner};
use crate::metrics::RunMetrics;
use crate::rng::{stream, RngExt};

pub struct Fake;

pub struct FakeExp {
    seed: u64,
    reps: u32,
    strategies: Vec<String>,
    agents: i64,
    hold_us: u64,
}

/// A fake experiment file with a [sweep] table.
pub const FAKE: &str = r#"
name = "fake"
seed = 7
replications = 3
strategies = ["eager", "wait_first(max_wait=1s)"]
[workload]
agents = 4
[sweep]
workload.agents = "1..5 step 1"
max_wait = ["0s", "2s"]
"#;

impl Runner for Fake {
    type Exp = FakeExp;

    fn resolve(&self, t: &toml::Table) -> Result<FakeExp, ResolveError> {
        fake_resolve(t).map_err(ResolveError::Refused)
    }

    fn describe(&self, e: &FakeExp) -> Description {
        Description {
            name: "fake".into(),
            question: "does the machinery work?".into(),
            seed: e.seed,
            replications: e.reps,
            strategies: e.strategies.clone(),
        }
    }

    fn render(&self, e: &FakeExp) -> String {
        format!("seed = {}\nreplications = {}\n", e.seed, e.reps)
    }

    fn simulate_into(
        &self,
        e: &FakeExp,
        s: usize,
        rep: u32,
        m: &mut RunMetrics,
    ) -> Result<(), crate::limits::RunError> {
        fake_simulate(e, s, rep, m);
        Ok(())
    }
}

/// The keys the fake knows; any other is refused, naming it.
fn fake_resolve(t: &toml::Table) -> Result<FakeExp, String> {
    for k in t.keys() {
        if !["name", "seed", "replications", "strategies", "workload"].contains(&k.as_str()) {
            return Err(format!("unknown key `{k}`"));
        }
    }
    let agents = t
        .get("workload")
        .and_then(|w| w.as_table())
        .map(|w| {
            w.iter()
                .map(|(k, v)| match (k.as_str(), v.as_integer()) {
                    ("agents", Some(a)) if a > 0 => Ok(a),
                    _ => Err(format!("unknown key or bad value `workload.{k}` = {v}")),
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .and_then(|v| v.first().copied())
        .unwrap_or(1);
    let strategies: Vec<String> = t["strategies"]
        .as_array()
        .ok_or("strategies")?
        .iter()
        .map(|s| s.as_str().unwrap_or("?").to_string())
        .collect();
    let hold_us = strategies
        .iter()
        .find_map(|s| s.strip_prefix("wait_first(max_wait="))
        .and_then(|s| crate::time::parse_duration_us(s.trim_end_matches(')')).ok())
        .unwrap_or(0);
    Ok(FakeExp {
        seed: t["seed"].as_integer().unwrap_or(0) as u64,
        reps: t["replications"].as_integer().unwrap_or(1) as u32,
        strategies,
        agents,
        hold_us,
    })
}

fn fake_simulate(e: &FakeExp, s: usize, rep: u32, m: &mut RunMetrics) {
    let mut rng = stream(e.seed, &[rep as u64, s as u64]);
    *m = RunMetrics::new();
    m.agents = e.agents as u64;
    m.requests = e.agents as u64;
    m.cost_usd = e.agents as f64 * (1.0 + rng.random::<f64>());
    m.cost_uncached_usd = 2.0 * e.agents as f64;
    for _ in 0..e.agents {
        let wait = if s == 1 { e.hold_us } else { 0 } + rng.random_range(1..1000u64);
        m.launch_wait_us.record(wait);
        m.ttft_us.record(rng.random_range(1000..2_000_000u64));
        m.completion_us.record(3_000_000 + wait);
    }
    m.makespan_us = 3_000_000 + e.hold_us;
}

/// A hold answer at points with an even number of agents (none at odd ones, as at points whose
/// experiment asks for none), its numbers a function of the point's values; the interval only
/// when the hold is below 2 s, so both forms of a row are written.
impl super::PointHold for Fake {
    fn hold(
        &self,
        _: &toml::Table,
        e: &FakeExp,
    ) -> Result<Option<super::hold::HoldAnswer>, crate::limits::RunError> {
        if e.agents % 2 != 0 {
            return Ok(None);
        }
        let cap_s = 0.25 * e.agents as f64 + crate::time::secs(e.hold_us);
        let refits = e.hold_us < 2_000_000;
        Ok(Some(super::hold::HoldAnswer {
            strategy: "wait_first(max_wait=1s)".into(),
            range: super::hold::HOLD_RANGE.into(),
            cap_s,
            cap_label: format!("{cap_s}s"),
            p_after_cap: 1.0 / e.agents as f64,
            ttft_p50_s: 0.5,
            ttft_p95_s: 1.5,
            ttft_p99_s: 2.5,
            draws: if refits { 3 } else { 0 },
            cap_range_s: refits.then_some([cap_s - 0.5, cap_s + 1.0 / 3.0]),
            p_after_cap_draws: refits.then_some(0.125),
            knife_edge: e.agents > 3,
            sentence: String::new(),
        }))
    }
}
