//! What a run records: its `RunMetrics`, and, for traced runs, the timeline segments and the
//! per-request records. Times are stored relative to t0.

use super::agent::Requester;
use super::latency::Timing;
use super::{Outcome, RequestKeys, RequestRecord, Segment, SegmentKind};
use crate::cache::{Breakpoint, Prompt, Usage};
use crate::metrics::{RunMetrics, Tokens};
use crate::time::{SimDuration, SimTime};

/// One request as served: what the metrics and the trace record of it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Served {
    pub who: Requester,
    pub request: u32,
    pub send_us: SimTime,
    pub usage: Usage,
    pub timing: Timing,
    pub out: u64,
    pub model: usize,
    pub cost_usd: f64,
}

/// The timeline and the request records of a traced run, of the agents below `lanes` (and
/// of the prewarm request and the parent, always): a sampled trace holds a few agents' lanes
/// however many agents run, so its memory does not grow with the run.
pub(super) struct Trace {
    pub segments: Vec<Segment>,
    pub requests: Vec<RequestRecord>,
    /// Agents `0..lanes` are recorded (`u32::MAX`: every agent).
    pub lanes: u32,
}

impl Trace {
    /// A trace of the agents below `lanes` (`None`: of every agent).
    pub fn new(lanes: Option<u32>) -> Trace {
        Trace { segments: Vec::new(), requests: Vec::new(), lanes: lanes.unwrap_or(u32::MAX) }
    }

    /// Whether `who`'s requests and segments are recorded.
    fn records(&self, who: Requester) -> bool {
        match who {
            Requester::Agent(a) => a < self.lanes,
            Requester::Prewarm | Requester::Parent => true,
        }
    }
}

/// The metrics of one run and its optional trace.
pub(super) struct Recorder<'a> {
    pub metrics: &'a mut RunMetrics,
    /// The traced run's timeline and request records (`None`: not traced).
    pub trace: Option<&'a mut Trace>,
    pub t0: SimTime,
    /// Agents in the run (to number the prewarm request and the parent in the trace).
    pub n: u32,
}

impl<'a> Recorder<'a> {
    /// Count one served request of an agent (or the prewarm) into the metrics (and the
    /// trace): `uncached_usd` is what it would have cost uncached, `launch_wait` is set on
    /// an agent's first request. Inlined: `s` is built by the caller just before, and read
    /// through a call it would be read back from memory right after being written.
    #[inline(always)]
    pub(super) fn request(
        &mut self,
        s: &Served,
        (uncached_usd, launch_wait): (f64, Option<SimDuration>),
        prompt: &Prompt,
        bps: &[Breakpoint],
    ) {
        let (u, mx) = (&s.usage, &mut *self.metrics);
        add_tokens(&mut mx.tokens, u, s.out);
        mx.requests += 1;
        mx.requests_with_hit += (u.cache_read > 0) as u64;
        mx.redundant_writes += u.redundant_writes;
        mx.cost_usd += s.cost_usd;
        mx.cost_uncached_usd += uncached_usd;
        mx.ttft_us.record(s.timing.ttft.as_us());
        if let Some(wait) = launch_wait {
            mx.launch_wait_us.record(wait.as_us());
        }
        if self.trace.is_some() {
            // A copy for the trace: a reference passed out of line would make the caller
            // build `s` in memory on every request, traced or not.
            self.trace_request(*s, prompt, bps);
        }
    }

    /// Count one served request of the parent, apart from the fan-out's.
    pub(super) fn parent_request(&mut self, s: &Served, prompt: &Prompt, bps: &[Breakpoint]) {
        let mx = &mut *self.metrics;
        mx.parent_requests += 1;
        add_tokens(&mut mx.parent_tokens, &s.usage, s.out);
        mx.parent_cost_usd += s.cost_usd;
        self.trace_request(*s, prompt, bps);
    }

    /// One timeline segment from `start` to `end` (traced runs). Only the check is inlined
    /// into the model's hot path; the recording is out of line (`#[cold]`), so an untraced
    /// run's loop stays small in the instruction cache.
    #[inline]
    pub(super) fn segment(
        &mut self,
        id: (Requester, u32),
        kind: SegmentKind,
        span: (SimTime, SimTime),
        outcome: Outcome,
    ) {
        if self.trace.is_some() {
            self.push_segment(id, kind, span, outcome);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_segment(
        &mut self,
        (who, request): (Requester, u32),
        kind: SegmentKind,
        (start, end): (SimTime, SimTime),
        outcome: Outcome,
    ) {
        let Some(trace) = self.trace.as_mut().filter(|t| t.records(who)) else { return };
        let (agent, t0) = (who.shown(self.n), self.t0);
        let (start_us, end_us) = ((start - t0).as_us(), (end - t0).as_us());
        trace.segments.push(Segment { agent, request, kind, start_us, end_us, outcome });
    }

    /// The timeline segments and the record of one served request (traced runs), with the
    /// prompt's size and the cache keys it touched. Out of line, as `push_segment`.
    #[cold]
    #[inline(never)]
    fn trace_request(&mut self, s: Served, prompt: &Prompt, bps: &[Breakpoint]) {
        if !self.trace.as_ref().is_some_and(|t| t.records(s.who)) {
            return;
        }
        let (u, t, now) = (&s.usage, s.timing, s.send_us);
        let (id, outcome, first) = ((s.who, s.request), Outcome::of(u), now + t.ttft);
        self.segment(id, SegmentKind::Prefill, (now, first), outcome);
        if !t.decode.is_zero() {
            self.segment(id, SegmentKind::Decode, (first, first + t.decode), outcome);
        }
        if u.cache_write() > 0 {
            // Zero-length when there is no ready delay: it still marks when the entry is ready.
            let ready = (first, first + t.ready_delay);
            self.segment(id, SegmentKind::EntryReady, ready, outcome);
        }
        let Some(trace) = self.trace.as_mut() else { return };
        trace.requests.push(RequestRecord {
            agent: s.who.shown(self.n),
            request: s.request,
            send_us: (now - self.t0).as_us(),
            ttft_us: t.ttft.as_us(),
            decode_us: t.decode.as_us(),
            ready_us: (first + t.ready_delay - self.t0).as_us(),
            prompt_tokens: prompt.tokens(),
            usage: *u,
            output_tokens: s.out,
            cost_usd: s.cost_usd,
            model: s.model,
            keys: keys(prompt, bps, u),
        });
    }
}

/// Count one request's usage and output into `tokens`.
fn add_tokens(tokens: &mut Tokens, u: &Usage, out: u64) {
    tokens.cache_read += u.cache_read;
    tokens.cache_write_5m += u.cache_write_5m;
    tokens.cache_write_1h += u.cache_write_1h;
    tokens.uncached += u.uncached;
    tokens.output += out;
}

/// The keys a request used: its hit boundary (found from `cache_read`: prefix token counts
/// strictly increase, since empty blocks are never pushed) and its breakpoints. An API
/// policy reads up to a block boundary; a GPU cache (`vllm`, `sglang`) may read into a
/// block, and its hit is the last boundary the read covers (`None` inside the first block).
fn keys(prompt: &Prompt, bps: &[Breakpoint], u: &Usage) -> RequestKeys {
    let covered = (0..prompt.len()).take_while(|&i| prompt.prefix_tokens(i) <= u.cache_read);
    let hit = (u.cache_read > 0).then(|| covered.last()).flatten().map(|i| prompt.prefix_digest(i));
    let mut breakpoints = [(Default::default(), 0); 3];
    for (slot, bp) in breakpoints.iter_mut().zip(bps) {
        *slot = (prompt.prefix_digest(bp.index), prompt.prefix_tokens(bp.index));
    }
    RequestKeys { hit, breakpoints, n_breakpoints: bps.len() }
}
