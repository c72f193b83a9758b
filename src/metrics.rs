//! What one simulated run measured, per strategy: token counters, costs, latency histograms.
//!
//! `RunMetrics` is produced by `model`, aggregated over replications by `results::Aggregate`
//! (for `exec`'s runs, sweeps and tunes), and written to files that `report` and `plot` read. One run keeps its latencies as raw samples
//! (a few per agent: cheap to clear and reuse); aggregates over replications record them into
//! HdrHistograms in microseconds with 3 significant digits, which merge exactly with `add`.

use hdrhistogram::Histogram;

/// Token counts as the API's `usage` reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    /// `input_tokens`: neither read nor written.
    pub uncached: u64,
    pub output: u64,
}

/// The measurements of one replication of one strategy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    pub tokens: Tokens,
    pub requests: u64,
    /// Requests with `cache_read > 0`.
    pub requests_with_hit: u64,
    /// Entries written while an equal entry was pending (docs/cache.md).
    pub redundant_writes: u64,
    pub cost_usd: f64,
    /// What the same tokens would have cost with no caching at all.
    pub cost_uncached_usd: f64,
    /// Per agent: from t = 0 (or its slot opening) to its first request's send.
    pub launch_wait_us: Samples,
    /// Per request: time to first token.
    pub ttft_us: Samples,
    /// Per agent: from its arrival (t = 0 unless `arrival_every`) to the end of its last response.
    pub completion_us: Samples,
    pub makespan_us: u64,
    pub agents: u64,
    /// 429 responses received.
    pub rate_limited: u64,
    /// Total time agents spent waiting on a retry-after.
    pub throttled_us: u64,
    pub events: u64,
    /// The parent conversation's own requests while the fan-out ran (`workload.
    /// parent_turn_every`): counted here, not in `tokens`, `requests` or `cost_usd`, so that
    /// strategies and agent kinds stay comparable on the fan-out's own cost.
    pub parent_requests: u64,
    pub parent_tokens: Tokens,
    pub parent_cost_usd: f64,
    /// 529 `overloaded_error` responses received (`[overload]`).
    pub overloaded: u64,
    /// Agents that gave up after the client's last retry of a 529 (their remaining turns are
    /// not sent; no completion time is recorded for them).
    pub failed_agents: u64,
    /// Requests whose lookup missed although an entry was readable (`cache.miss_probability`).
    pub isolated_misses: u64,
    /// Requests billed at long-context prices (`model_params.long_context`).
    pub long_context_requests: u64,
    /// `wait_first`: from the hold's start (the first writer taking its slot) to the first
    /// writer's first token, the moment its response begins; `None` for other strategies or
    /// when it never began. Not a column of the result files (`tune` reads it).
    pub hold_first_token_us: Option<u64>,
    /// `wait_first`: the hold reached its cap while the first writer's response had not begun
    /// (a first token at the cap's very microsecond counts as begun). The held agents then went
    /// before the entry was readable: the hold saved nothing. Not a result-file column.
    pub hold_capped: bool,
    /// The self-hosted server's GPU time and memory (`vllm`, `sglang`; zero otherwise). Not a
    /// result-file column.
    pub server: ServerMetrics,
}

/// What a self-hosted run used of its server (`cache.policy = "vllm" | "sglang"`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerMetrics {
    /// GPU-microseconds busy: per replica the time a prefill step ran or a sequence decoded,
    /// times its GPUs. `cost_usd` is this at `server.gpu_usd_per_hour`.
    pub gpu_busy_us: u64,
    /// GPU-microseconds provisioned: every GPU of every replica for the makespan.
    pub gpu_provisioned_us: u64,
    /// The provisioned GPU time at `server.gpu_usd_per_hour` (a reserved server's cost).
    pub provisioned_usd: f64,
    /// Tokens evicted from the replicas' KV memory.
    pub evicted_tokens: u64,
    /// The most tokens a replica stored beyond `server.kv_capacity_tokens` (nothing
    /// evictable: every block held by a running request).
    pub overcommit_peak_tokens: u64,
}

/// The optional counters of a run beside `SCALAR_NAMES` (not CSV columns: shown in `--json`
/// and under the table only when the feature that makes them is on), in `RunMetrics::extras`
/// order.
pub const EXTRA_NAMES: [&str; 6] = [
    "parent_requests",
    "parent_cost_usd",
    "overloaded",
    "failed_agents",
    "isolated_misses",
    "long_context_requests",
];

/// The latency samples of one run, in microseconds, in the order they were recorded.
///
/// A run records a few values per agent; keeping them raw makes a run cheap to reset (no
/// 200 KB histogram to zero) and exact. Quantiles follow HdrHistogram's rank rule: the
/// smallest recorded value with at least `ceil(q * n)` values at or below it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples(Vec<u64>);

impl Samples {
    pub fn record(&mut self, value_us: u64) {
        self.0.push(value_us);
    }
    /// Forget every value, keeping the capacity.
    pub fn clear(&mut self) {
        self.0.clear();
    }
    pub fn len(&self) -> u64 {
        self.0.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn values(&self) -> &[u64] {
        &self.0
    }
    /// The largest value, 0 when empty (as HdrHistogram's `max`).
    pub fn max(&self) -> u64 {
        self.0.iter().copied().max().unwrap_or(0)
    }
    /// The smallest value, 0 when empty.
    pub fn min(&self) -> u64 {
        self.0.iter().copied().min().unwrap_or(0)
    }
    /// The value at quantile `q` in [0, 1] (HdrHistogram's rank rule, exact values); 0 when empty.
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        if self.0.is_empty() {
            return 0;
        }
        let n = self.0.len();
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n);
        // The ends need no selection: a run's p99 of fewer than 100 values is its largest.
        if rank == n {
            return self.max();
        }
        if rank == 1 {
            return self.min();
        }
        // A per-thread scratch copy: the selection reorders it, and a run asks for three
        // quantiles, so a fresh Vec each would be an allocation per quantile per run.
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            scratch.extend_from_slice(&self.0);
            *scratch.select_nth_unstable(rank - 1).1
        })
    }
    /// Record every sample into `h` (saturating at its highest trackable value); their
    /// smallest and largest value, `None` when empty (one pass for the three).
    pub fn record_into(&self, h: &mut Histogram<u64>) -> Option<(u64, u64)> {
        let (mut lo, mut hi) = (u64::MAX, 0);
        for &v in &self.0 {
            h.saturating_record(v);
            (lo, hi) = (lo.min(v), hi.max(v));
        }
        (!self.0.is_empty()).then_some((lo, hi))
    }
}

/// The bounds of a latency histogram (lowest, highest, significant digits): 1 us .. 10 h, 3
/// significant digits.
pub const LATENCY_BOUNDS: (u64, u64, u8) = (1, 36_000_000_000, 3);

/// A new latency histogram (`LATENCY_BOUNDS`).
pub fn new_histogram() -> Histogram<u64> {
    let (low, high, sigfig) = LATENCY_BOUNDS;
    Histogram::new_with_bounds(low, high, sigfig).expect("static histogram bounds are valid")
}

/// The names of the scalar metrics, in the fixed order of every table and CSV.
/// Durations are in seconds; costs in USD; `cost_relative` = cost / all-uncached cost.
pub const SCALAR_NAMES: [&str; 18] = [
    "cost_usd",
    "cost_relative",
    "hit_rate",
    "requests",
    "requests_with_hit",
    "redundant_writes",
    "cache_read",
    "cache_write",
    "uncached",
    "output",
    "makespan_s",
    "throughput_agents_per_min",
    "throughput_tokens_per_min",
    "rate_limited",
    "throttled_s",
    "launch_wait_p99_s",
    "ttft_p50_s",
    "completion_p99_s",
];

/// The latency histograms of a run, in the fixed order used for files.
pub const LATENCY_NAMES: [&str; 3] = ["launch_wait", "ttft", "completion"];

impl Tokens {
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }
    /// All input tokens: read + written + uncached.
    pub fn input(&self) -> u64 {
        self.cache_read + self.cache_write() + self.uncached
    }
    /// Token hit rate `read / (read + write + uncached)`; 0 when there was no input.
    pub fn hit_rate(&self) -> f64 {
        let input = self.input();
        if input == 0 {
            0.0
        } else {
            self.cache_read as f64 / input as f64
        }
    }
}

impl RunMetrics {
    /// An empty record, ready to count into.
    pub fn new() -> Self {
        Self::default()
    }

    /// Back to `new()`'s state, keeping the samples' capacity (a simulator reused across runs
    /// counts each run from zero without reallocating).
    pub fn reset(&mut self) {
        let [launch_wait_us, ttft_us, completion_us] =
            [&mut self.launch_wait_us, &mut self.ttft_us, &mut self.completion_us].map(|s| {
                s.clear();
                std::mem::take(s)
            });
        *self = RunMetrics { launch_wait_us, ttft_us, completion_us, ..Self::default() };
    }

    /// The optional counters, in `EXTRA_NAMES` order.
    pub fn extras(&self) -> [f64; EXTRA_NAMES.len()] {
        [
            self.parent_requests as f64,
            self.parent_cost_usd,
            self.overloaded as f64,
            self.failed_agents as f64,
            self.isolated_misses as f64,
            self.long_context_requests as f64,
        ]
    }

    /// The latency samples, in `LATENCY_NAMES` order.
    pub fn samples(&self) -> [&Samples; 3] {
        [&self.launch_wait_us, &self.ttft_us, &self.completion_us]
    }

    /// The scalar metrics, in `SCALAR_NAMES` order.
    pub fn scalars(&self) -> [f64; 18] {
        let s = crate::time::secs;
        let minutes = self.makespan_us as f64 / 60e6;
        let per_min = |x: f64| if minutes > 0.0 { x / minutes } else { 0.0 };
        let rel =
            if self.cost_uncached_usd > 0.0 { self.cost_usd / self.cost_uncached_usd } else { 0.0 };
        [
            self.cost_usd,
            rel,
            self.tokens.hit_rate(),
            self.requests as f64,
            self.requests_with_hit as f64,
            self.redundant_writes as f64,
            self.tokens.cache_read as f64,
            self.tokens.cache_write() as f64,
            self.tokens.uncached as f64,
            self.tokens.output as f64,
            s(self.makespan_us),
            per_min(self.agents as f64),
            per_min((self.tokens.input() + self.tokens.output) as f64),
            self.rate_limited as f64,
            s(self.throttled_us),
            s(self.launch_wait_us.value_at_quantile(0.99)),
            s(self.ttft_us.value_at_quantile(0.50)),
            s(self.completion_us.value_at_quantile(0.99)),
        ]
    }
}
