//! The simulated time a run cannot end before, from what the experiment fixes up front: the
//! arrival schedule, a `stagger` launch schedule, `sequential`'s chain of first responses and
//! the concurrency slots' waves, each at the least a request and an agent can take. A run whose
//! floor is past `limits.horizon` would stop there, every replication of it: refused before it
//! starts (exit 2), the reason in hours.
//!
//! A floor, never an estimate: each term is a time some event of every run is at or after
//! (the last agent's gate, its last response's end), so a refused run could not have finished.
//! Beside it, the bounds of a distribution's draws that the floors and the estimates use.
//! Pure: no I/O, no clock.

use crate::config::{strategy_label, AgentKind, ExperimentSpec, Strategy};
use crate::dist::Dist;
use crate::numfmt::hours;
use crate::time::{Human, US_PER_H};

/// A value that a draw of `d` exceeds with probability below about 1e-8 (the bound itself for
/// bounded distributions; 6 standard deviations for the normal and the lognormal's log).
pub fn dist_high(d: &Dist) -> f64 {
    match d {
        Dist::Const(x) => *x,
        Dist::Uniform { low, high } => low.max(*high),
        Dist::Normal { mean, sd } => mean + 6.0 * sd,
        Dist::LogNormal { median, p90 } => {
            let sigma =
                if *median > 0.0 && p90 > median { (p90 / median).ln() / 1.2816 } else { 0.0 };
            median * (6.0 * sigma).exp()
        }
        Dist::Exp { mean } => mean * 20.0,
        Dist::Empirical(v) => v.iter().copied().fold(0.0, f64::max),
        Dist::Spliced(s) => s.max,
    }
}

/// The least a draw of `d` can be (0 where the distribution reaches down to 0).
fn dist_low(d: &Dist) -> f64 {
    match d {
        Dist::Const(x) => *x,
        Dist::Uniform { low, high } => low.min(*high),
        Dist::Empirical(v) => v.iter().copied().fold(f64::INFINITY, f64::min),
        _ => 0.0,
    }
    .max(0.0)
}

/// A lower bound of `d`'s draws as whole microseconds (draws are rounded, never below the
/// floor of the bound).
fn low_us(d: &Dist) -> u64 {
    let low = dist_low(d).floor();
    if low.is_finite() {
        low.min(u64::MAX as f64) as u64
    } else {
        0
    }
}

/// What one agent takes at least, from its slot to its last response's end: `turns` requests
/// of at least `request_us` (a hosted model's fixed overhead) and a tool call of at least
/// `tool_us` between two turns. Zero where a turn may end the agent early (a 529 it gives up
/// on, a refused tool call) or a server's queue sets the latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AgentFloor {
    turns: u64,
    request_us: u64,
    tool_us: u64,
}

impl AgentFloor {
    fn of(exp: &ExperimentSpec) -> AgentFloor {
        let w = &exp.workload;
        let exact = !exp.cache.policy.is_server()
            && exp.overload.is_none()
            && !matches!(w.kind, AgentKind::ForkDenyAtCall { .. });
        if !exact {
            return AgentFloor { turns: 0, request_us: 0, tool_us: 0 };
        }
        let turns = if w.kind == AgentKind::Btw { 1 } else { low_us(&w.turns).max(1) };
        let request_us = std::iter::once(&exp.latency)
            .chain(exp.latency_other.as_ref())
            .map(|l| low_us(&l.overhead_us))
            .min()
            .unwrap_or(0);
        AgentFloor { turns, request_us, tool_us: low_us(&w.tool_latency_us) }
    }

    fn total_us(self) -> u64 {
        let requests = self.turns.saturating_mul(self.request_us);
        requests.saturating_add(self.turns.saturating_sub(1).saturating_mul(self.tool_us))
    }
}

/// The longest floor of a run of `strategy`: its length and why, for people.
struct Floor {
    us: u64,
    /// What lasts that long: `the launch schedule alone lasts`.
    what: &'static str,
    /// Where it comes from.
    why: String,
    /// The keys that lower it.
    lower: &'static str,
}

/// The floors of a run of `exp` under `strategy`, the longest first.
fn floor(exp: &ExperimentSpec, strategy: &Strategy) -> Floor {
    let w = &exp.workload;
    let n = u64::from(w.agents);
    let last = n.saturating_sub(1);
    let agent = AgentFloor::of(exp);
    let own = agent.total_us();
    let tail = match own {
        0 => String::new(),
        us => format!(", then at least {} for the last agent's own turns", Human(us)),
    };
    let mut floors = vec![match w.arrival_every_us {
        0 => Floor {
            us: own,
            what: "an agent alone takes at least",
            why: format!(
                "{} turns of at least {} and a tool call of at least {} between two",
                agent.turns,
                Human(agent.request_us),
                Human(agent.tool_us)
            ),
            lower: "workload.turns",
        },
        every => Floor {
            us: last.saturating_mul(every).saturating_add(own),
            what: "the arrivals alone last",
            why: format!("workload.agents = {n} arriving {} apart{tail}", Human(every)),
            lower: "workload.agents or workload.arrival_every",
        },
    }];
    if let Strategy::Stagger { interval_us } = strategy {
        floors.push(Floor {
            us: last.saturating_mul(*interval_us).saturating_add(own),
            what: "the launch schedule alone lasts",
            why: format!("workload.agents = {n} launched {} apart{tail}", Human(*interval_us)),
            lower: "workload.agents or the stagger interval",
        });
    }
    if *strategy == Strategy::Sequential && agent.request_us > 0 {
        floors.push(Floor {
            us: last.saturating_mul(agent.request_us).saturating_add(own),
            what: "the launch schedule alone lasts",
            why: format!(
                "workload.agents = {n} launched one after another's first response, each at \
                 least {}{tail}",
                Human(agent.request_us)
            ),
            lower: "workload.agents",
        });
    }
    floors.extend(waves(exp, agent));
    floors.into_iter().max_by_key(|f| f.us).expect("the arrivals are a floor")
}

/// The concurrency slots' floor: `ceil(agents / concurrency)` waves of the least an agent
/// takes, when there is more than one and an agent takes some time.
fn waves(exp: &ExperimentSpec, agent: AgentFloor) -> Option<Floor> {
    let w = &exp.workload;
    let (n, own) = (u64::from(w.agents), agent.total_us());
    let waves = n.div_ceil(u64::from(w.concurrency).max(1));
    (waves > 1 && own > 0).then(|| Floor {
        us: waves.saturating_mul(own),
        what: "the agents alone take at least",
        why: format!(
            "workload.agents = {n} through workload.concurrency = {} slots: {waves} waves \
                 of at least {} each, {} turns of at least {} and a tool call of at least {} \
                 between two",
            w.concurrency,
            Human(own),
            agent.turns,
            Human(agent.request_us),
            Human(agent.tool_us)
        ),
        lower: "workload.agents or workload.turns, or raise workload.concurrency",
    })
}

/// Refuse `exp` when a run of one of its strategies cannot end before `limits.horizon`:
/// the message names the strategy, the schedule that lasts too long in hours, the horizon and
/// how to go on. `None`: every strategy's floor is within the horizon.
pub fn past_horizon(exp: &ExperimentSpec) -> Option<String> {
    let horizon = exp.limits.horizon_us;
    let (strategy, f) = exp
        .strategies
        .iter()
        .map(|s| (s, floor(exp, s)))
        .max_by_key(|(_, f)| f.us)
        .filter(|(_, f)| f.us > horizon)?;
    let raise = f.us.div_ceil(US_PER_H).saturating_add(1);
    Some(format!(
        "refusing to start: under {}, {} {} ({}), past limits.horizon = {}, where every run \
         would stop; raise limits.horizon (`--set limits.horizon={raise}h`) or lower {}",
        strategy_label(strategy),
        f.what,
        hours(f.us),
        f.why,
        hours(horizon),
        f.lower
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_of_draws_never_exceed_a_draw() {
        assert_eq!(low_us(&Dist::Const(2.7)), 2);
        assert_eq!(low_us(&Dist::Uniform { low: 3.0, high: 9.0 }), 3);
        assert_eq!(low_us(&Dist::Empirical(vec![5.0, 4.0, 8.0])), 4);
        assert_eq!(low_us(&Dist::Exp { mean: 10.0 }), 0);
        assert_eq!(low_us(&Dist::LogNormal { median: 1.0, p90: 2.0 }), 0);
    }

    fn experiment(text: &str) -> ExperimentSpec {
        crate::config::resolve(&text.parse().unwrap(), "t.toml").unwrap()
    }

    #[test]
    fn each_floor_is_named_when_it_passes_the_horizon() {
        // 2 turns of at least 1 s, the preset's tool call of at least 2 s between: 4 s.
        let exp = |strategy: &str, workload: &str, horizon: &str| {
            experiment(&format!(
                "strategies = [\"{strategy}\"]\n[workload]\nturns = \"const(2)\"\n{workload}\n\
                 [latency]\noverhead = \"const(1s)\"\n[limits]\nhorizon = \"{horizon}\"\n"
            ))
        };
        assert_eq!(past_horizon(&exp("sequential", "agents = 10", "1h")), None);
        let why = past_horizon(&exp("sequential", "agents = 200", "2min")).unwrap();
        assert!(
            why.contains("under sequential, the launch schedule alone lasts 3.38 min"),
            "{why}"
        );
        let why = past_horizon(&exp("eager", "agents = 200\nconcurrency = 1", "2min")).unwrap();
        assert!(why.contains("the agents alone take at least 13.3 min"), "{why}");
        assert!(why.contains("200 waves of at least 4s each"), "{why}");
        let why = past_horizon(&exp("eager", "agents = 5\narrival_every = \"1h\"", "3h")).unwrap();
        assert!(why.contains("the arrivals alone last 4 h"), "{why}");
        assert!(why.contains("raise limits.horizon (`--set limits.horizon=6h`)"), "{why}");
    }

    #[test]
    fn an_agent_takes_its_turns_and_the_tool_calls_between() {
        let a = AgentFloor { turns: 3, request_us: 100, tool_us: 10 };
        assert_eq!(a.total_us(), 320);
        let one = AgentFloor { turns: 1, request_us: 100, tool_us: 10 };
        assert_eq!(one.total_us(), 100);
    }
}
