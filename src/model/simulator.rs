//! `Simulator`: the model's entry point for many runs. It keeps one run's buffers for the
//! next (`sim::Buffers`), so a sweep allocates nothing per run once they have grown.

use super::recorder::Trace;
use super::sim::{Buffers, Run};
use super::{Detailed, SimError};
use crate::config::{ExperimentSpec, Strategy};
use crate::metrics::RunMetrics;

/// Reusable simulation buffers: the event heap, the launch strategy's buffers and the caches
/// keep their capacity across runs.
#[derive(Default)]
pub struct Simulator {
    buffers: Buffers,
}

impl Simulator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Run one replication into `metrics` (reset first: its sample buffers are reused).
    pub fn run_into(
        &mut self,
        exp: &ExperimentSpec,
        strategy: &Strategy,
        replication: u32,
        metrics: &mut RunMetrics,
    ) -> Result<(), SimError> {
        metrics.reset();
        Run::new(exp, strategy, replication, &mut self.buffers, (metrics, None))?.go()
    }

    /// Run one replication with the timeline and the per-request records.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // the tests' entry
    pub fn run_detailed(
        &mut self,
        exp: &ExperimentSpec,
        strategy: &Strategy,
        replication: u32,
    ) -> Result<Detailed, SimError> {
        self.run_sampled(exp, strategy, replication, None)
    }

    /// `run_detailed` recording only agents `0..lanes` (and the prewarm request and the
    /// parent), as they run: the trace's memory is bounded by `lanes`, not by the agents.
    /// `None`: every agent. The metrics count every agent either way.
    pub fn run_sampled(
        &mut self,
        exp: &ExperimentSpec,
        strategy: &Strategy,
        replication: u32,
        lanes: Option<u32>,
    ) -> Result<Detailed, SimError> {
        let (mut metrics, mut trace) = (RunMetrics::new(), Trace::new(lanes));
        let counts = (&mut metrics, Some(&mut trace));
        Run::new(exp, strategy, replication, &mut self.buffers, counts)?.go()?;
        let Trace { mut segments, requests, .. } = trace;
        segments.sort_by_key(|s| (s.agent, s.start_us, s.kind, s.request));
        Ok(Detailed { metrics, segments, requests })
    }
}
