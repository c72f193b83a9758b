//! The real simulator: `config::resolve` and `model::Simulator::run_into`, with one reusable
//! model simulator per worker thread (its event heap keeps its capacity across runs, traced
//! runs included).

use std::cell::RefCell;

use super::{Description, ResolveError, Runner};
use crate::config::{self, ExperimentSpec};
use crate::limits::RunError;
use crate::metrics::RunMetrics;
use crate::results::TraceRow;

/// Resolves tables with `config::resolve` and runs `model`; `origin` names the file in errors.
pub struct ModelRunner {
    #[cfg_attr(not(feature = "sweep"), allow(dead_code))]
    pub origin: String,
}

thread_local! {
    static MODEL: RefCell<crate::model::Simulator> = RefCell::new(crate::model::Simulator::new());
}

/// Free this thread's model buffers (kept for the next run otherwise): a long-lived thread
/// that ran a large experiment (`serve`'s) gives its memory back instead of holding it
/// until the thread ends.
#[cfg(feature = "serve")]
pub fn release_buffers() {
    MODEL.with(|m| drop(m.replace(crate::model::Simulator::new())));
}

impl Runner for ModelRunner {
    type Exp = ExperimentSpec;

    fn resolve(&self, table: &toml::Table) -> Result<ExperimentSpec, ResolveError> {
        Ok(config::resolve(table, &self.origin)?)
    }

    fn check_changed(
        &self,
        base: &ExperimentSpec,
        table: &toml::Table,
        changed: &[&str],
    ) -> Result<(), ResolveError> {
        Ok(config::check_changed(base, table, &self.origin, changed)?)
    }

    fn describe(&self, exp: &ExperimentSpec) -> Description {
        Description {
            name: exp.name.clone(),
            question: exp.question.clone(),
            seed: exp.seed,
            replications: exp.replications,
            strategies: exp.strategies.iter().map(config::strategy_label).collect(),
        }
    }

    fn render(&self, exp: &ExperimentSpec) -> String {
        config::render(exp)
    }

    fn simulate_into(
        &self,
        exp: &ExperimentSpec,
        strategy: usize,
        rep: u32,
        out: &mut RunMetrics,
    ) -> Result<(), RunError> {
        MODEL.with(|m| {
            m.borrow_mut()
                .run_into(exp, &exp.strategies[strategy], rep, out)
                .map_err(RunError::from)
        })
    }

    fn trace(&self, exp: &ExperimentSpec, strategy: usize) -> Result<Vec<TraceRow>, RunError> {
        self.sampled_trace(exp, strategy, None)
    }
}

impl ModelRunner {
    /// `Runner::trace` of agents `0..lanes` only (and the prewarm request and the parent;
    /// `None`: every agent), recorded as the run goes, so its memory is bounded by `lanes`.
    pub fn sampled_trace(
        &self,
        exp: &ExperimentSpec,
        strategy: usize,
        lanes: Option<u32>,
    ) -> Result<Vec<TraceRow>, RunError> {
        let s = &exp.strategies[strategy];
        let detailed =
            MODEL.with(|m| m.borrow_mut().run_sampled(exp, s, 0, lanes)).map_err(RunError::from)?;
        let label = config::strategy_label(s);
        Ok(detailed
            .segments
            .iter()
            .map(|g| TraceRow {
                strategy: label.clone(),
                agent: g.agent,
                request: g.request,
                segment: g.kind.name().to_string(),
                start_s: crate::time::secs(g.start_us),
                end_s: crate::time::secs(g.end_us),
                outcome: g.outcome.name().to_string(),
            })
            .collect())
    }

    /// `exec::trace_rows` (replication 0 of every strategy) with agents `0..lanes` traced.
    pub fn sampled_trace_rows(
        &self,
        exp: &ExperimentSpec,
        lanes: u32,
    ) -> Result<Vec<TraceRow>, RunError> {
        let mut rows = Vec::new();
        for (s, strategy) in exp.strategies.iter().enumerate() {
            let label = config::strategy_label(strategy);
            let t = self
                .sampled_trace(exp, s, Some(lanes))
                .map_err(|e| RunError::Internal(format!("{label}: {e}")))?;
            rows.extend(t);
        }
        Ok(rows)
    }
}
