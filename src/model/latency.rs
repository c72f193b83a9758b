//! The latency model of docs/model.md:
//! `ttft = overhead + (uncached + cache_write) / prefill_rate + cache_read / cached_rate
//!   + prefilled x context / attention_rate` (context: all input tokens; the last term is the
//! new tokens' attention over the whole context, absent at the default `attention_rate = inf`),
//! `duration = ttft + output_tokens / decode_rate`. Every term is drawn from its distribution.

use crate::config::LatencyParams;
use crate::dist::{round_u64, Dist, Sampler};
use crate::rng::ChaCha8Rng;
use crate::time::{SimDuration, US_PER_S};

/// Fixed time to first token, microseconds (the 2024 launch post (anthropic.com/news/prompt-caching) calibration, below).
pub const DEFAULT_OVERHEAD_US: f64 = 500_000.0;
/// Uncached and written tokens per second: 9,100.
pub const DEFAULT_PREFILL_RATE: f64 = 9_100.0;
/// Cache-read tokens per second: 51,500.
pub const DEFAULT_CACHED_RATE: f64 = 51_500.0;
/// Output tokens per second (docs/experiments.md).
pub const DEFAULT_DECODE_RATE: f64 = 50.0;

/// The default latency model: named assumptions, calibrated to the only public Anthropic
/// figures (the 2024 launch post (anthropic.com/news/prompt-caching), the 2024 launch post, Claude 3.5 Sonnet): time to first token
/// 11.5 s uncached / 2.4 s cached for a 100k-token prompt, 1.6 s / 1.1 s for 10k.
///
/// - Uncached: `1.6 = o + 10k/p` and `11.5 = o + 100k/p` give `p = 90k/9.9 = 9,091 tok/s`
///   and `o = 0.5 s`; we take 9,100 tok/s and 500 ms.
/// - Cached, with `o = 0.5 s`: least squares over `0.5 + 100k/r = 2.4` and `0.5 + 10k/r = 1.1`
///   gives `1/r = 1.96e5 / 1.01e10`, `r = 51,530 tok/s`; we take 51,500 (100k cached: 2.44 s;
///   10k cached: 0.69 s, faster than the post's 1.1 s, which we accept to fit long prefixes).
/// - Decode 50 tok/s and no ready delay (the prompt-caching docs (platform.claude.com/docs/en/build-with-claude/prompt-caching): none is published).
///
/// Every value is overridable (`[latency]` in an experiment, `latency.*` in a replay).
impl Default for LatencyParams {
    fn default() -> Self {
        LatencyParams {
            overhead_us: Dist::Const(DEFAULT_OVERHEAD_US),
            prefill_rate: Dist::Const(DEFAULT_PREFILL_RATE),
            cached_rate: Dist::Const(DEFAULT_CACHED_RATE),
            decode_rate: Dist::Const(DEFAULT_DECODE_RATE),
            ready_delay_us: Dist::Const(0.0),
            attention_rate: Dist::Const(f64::INFINITY),
        }
    }
}

/// Tokens of one request, as the latency model sees them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// `uncached + cache_write`: tokens that must be prefilled.
    pub prefill_tokens: u64,
    /// `cache_read`: tokens loaded from the cache.
    pub cached_tokens: u64,
    pub output_tokens: u64,
}

/// One request's drawn timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// From the send to the first token.
    pub ttft: SimDuration,
    /// From the first token to the end of the response.
    pub decode: SimDuration,
    /// From the first token to the writer's entries becoming readable.
    pub ready_delay: SimDuration,
}

/// Draw the timing of one request. Draw order is fixed (overhead, prefill, cached, decode,
/// ready delay) so that streams stay aligned across strategies; constant terms draw nothing.
pub fn draw(params: &LatencyParams, work: Work, rng: &mut ChaCha8Rng) -> Timing {
    Latency::new(params).draw(work, rng)
}

/// `LatencyParams` ready to draw from (`Sampler`s: a lognormal's sigma computed once), for a
/// run that draws every request's timing from the same parameters. Draws as `draw` does.
#[derive(Debug, Clone, Copy)]
pub struct Latency<'p> {
    shape: Shape<'p>,
}

/// Which terms a run draws, decided once. A constant term draws nothing from the stream, so
/// hoisting it out of the request changes no draw and no float.
#[derive(Debug, Clone, Copy)]
enum Shape<'p> {
    /// At most the prefill rate is drawn: the other terms are `fixed`'s constants, the
    /// overhead and the ready delay already rounded to microseconds.
    Prefill { fixed: Rates, prefill_rate: Sampler<'p> },
    /// Any other term drawn: every term through its sampler, in `draw`'s order.
    Drawn {
        overhead_us: Sampler<'p>,
        prefill_rate: Sampler<'p>,
        cached_rate: Sampler<'p>,
        decode_rate: Sampler<'p>,
        ready_delay_us: Sampler<'p>,
        attention_rate: Sampler<'p>,
    },
}

impl<'p> Latency<'p> {
    pub fn new(p: &'p LatencyParams) -> Self {
        let overhead_us = Sampler::new(&p.overhead_us);
        let prefill_rate = Sampler::new(&p.prefill_rate);
        let cached_rate = Sampler::new(&p.cached_rate);
        let decode_rate = Sampler::new(&p.decode_rate);
        let ready_delay_us = Sampler::new(&p.ready_delay_us);
        let attention_rate = Sampler::new(&p.attention_rate);
        let constants = (
            overhead_us.constant(),
            cached_rate.constant(),
            decode_rate.constant(),
            ready_delay_us.constant(),
            attention_rate.constant(),
        );
        let shape = match constants {
            (
                Some(overhead),
                Some(cached_rate),
                Some(decode_rate),
                Some(ready),
                Some(attention),
            ) => Shape::Prefill {
                fixed: Rates {
                    overhead: SimDuration::from_us(round_u64(overhead.max(0.0))),
                    prefill_rate: f64::NAN,
                    cached_rate,
                    decode_rate,
                    ready_delay: SimDuration::from_us(round_u64(ready)),
                    attention_rate: attention,
                },
                prefill_rate,
            },
            _ => Shape::Drawn {
                overhead_us,
                prefill_rate,
                cached_rate,
                decode_rate,
                ready_delay_us,
                attention_rate,
            },
        };
        Latency { shape }
    }

    /// Draw one request's timing for `work`, in `draw`'s order: its terms (`sample`), then
    /// their timing of `work` (`Terms::timing`).
    pub fn draw(&self, work: Work, rng: &mut ChaCha8Rng) -> Timing {
        let terms = self.sample(rng).terms(work.output_tokens);
        terms.timing(work.prefill_tokens, work.cached_tokens)
    }
}

/// One request's drawn terms, before they meet its tokens: what `Latency::sample` draws and
/// `Rates::timing` times a request with. Drawing them is most of a timing's cost and needs
/// no tokens, so a replication's strategies draw them once (`model::tape`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    overhead: SimDuration,
    prefill_rate: f64,
    cached_rate: f64,
    decode_rate: f64,
    ready_delay: SimDuration,
    attention_rate: f64,
}

impl Rates {
    /// These terms for a request of `output_tokens`: its decode time, which needs no cache,
    /// computed now.
    #[inline]
    pub fn terms(&self, output_tokens: u64) -> Terms {
        Terms {
            overhead: self.overhead,
            prefill_rate: self.prefill_rate,
            cached_rate: self.cached_rate,
            decode: secs_rounded(tokens_over_rate(output_tokens, self.decode_rate)),
            ready_delay: self.ready_delay,
            attention_rate: self.attention_rate,
        }
    }
}

/// One request's drawn terms with its decode time (`Rates::terms`): all its timing needs but
/// the cache's token counts. A replication's strategies send each agent request with the same
/// output tokens, so the tape computes its decode time once (`model::tape`), and the chain
/// from the cache lookup to the scheduled time carries no decode division.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Terms {
    overhead: SimDuration,
    prefill_rate: f64,
    cached_rate: f64,
    decode: SimDuration,
    ready_delay: SimDuration,
    attention_rate: f64,
}

impl Terms {
    /// The timing of a request that prefills `prefill_tokens` (uncached and written) and
    /// reads `cached_tokens`.
    #[inline]
    pub fn timing(&self, prefill_tokens: u64, cached_tokens: u64) -> Timing {
        let (tokens, rates) =
            ((prefill_tokens, cached_tokens), (self.prefill_rate, self.cached_rate));
        let ttft_us = ttft_us(tokens, rates) + attention_us(tokens, self.attention_rate);
        let ttft = self.overhead + us_rounded(ttft_us);
        Timing { ttft, decode: self.decode, ready_delay: self.ready_delay }
    }
}

impl Latency<'_> {
    /// Draw one request's terms from `rng`, in `draw`'s order; constant terms draw nothing.
    /// A drawn prefill rate is computed with libm's exp (`Sampler::sample`): it is drawn once
    /// per request and replication (`model::tape`), so an inline exp would not pay here.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> Rates {
        match &self.shape {
            Shape::Prefill { fixed, prefill_rate } => {
                Rates { prefill_rate: prefill_rate.sample(rng), ..*fixed }
            }
            Shape::Drawn {
                overhead_us,
                prefill_rate,
                cached_rate,
                decode_rate,
                ready_delay_us,
                attention_rate,
            } => {
                let overhead_us = overhead_us.sample(rng).max(0.0);
                let prefill_rate = prefill_rate.sample(rng);
                let cached_rate = cached_rate.sample(rng);
                let decode_rate = decode_rate.sample(rng);
                let ready_delay = SimDuration::from_us(ready_delay_us.sample_u64(rng));
                // Last, so that a constant (the default, no term) leaves every stream as it was.
                let attention_rate = attention_rate.sample(rng);
                let overhead = SimDuration::from_us(round_u64(overhead_us));
                Rates {
                    overhead,
                    prefill_rate,
                    cached_rate,
                    decode_rate,
                    ready_delay,
                    attention_rate,
                }
            }
        }
    }
}

/// The prefill and cache-read time of a request's (prefill, cached) tokens, in microseconds,
/// not yet rounded.
#[inline]
fn ttft_us(
    (prefill_tokens, cached_tokens): (u64, u64),
    (prefill_rate, cached_rate): (f64, f64),
) -> f64 {
    let ttft_s = tokens_over_rate(prefill_tokens, prefill_rate)
        + tokens_over_rate(cached_tokens, cached_rate);
    ttft_s * US_PER_S as f64
}

/// The prefilled tokens' attention over the whole context, microseconds, not yet rounded:
/// `prefill x (prefill + cached) / attention_rate` (0 at an infinite rate, the default).
#[inline]
fn attention_us((prefill_tokens, cached_tokens): (u64, u64), attention_rate: f64) -> f64 {
    if prefill_tokens == 0 || attention_rate == f64::INFINITY {
        return 0.0;
    }
    let context = tokens_f64(prefill_tokens.saturating_add(cached_tokens));
    tokens_over_rate(prefill_tokens, attention_rate) * context * US_PER_S as f64
}

fn tokens_over_rate(tokens: u64, rate_per_s: f64) -> f64 {
    if tokens == 0 {
        0.0
    } else if rate_per_s > 0.0 {
        tokens_f64(tokens) / rate_per_s
    } else {
        f64::INFINITY
    }
}

/// `tokens as f64`, converted as an `i64` below 2^63 (always, in practice): the same value,
/// since either conversion rounds the same integer to nearest, but x86-64 converts an `i64`
/// in one instruction where a `u64` takes five dependent ones (two float adds), and converting
/// the cache lookup's tokens is the first link of the chain to a request's time. From 2^63,
/// half of it with the lost bit kept as a sticky bit, converted, then doubled: one rounding,
/// the same. (Written as `tokens as f64` there, LLVM merges both arms back into the five.)
#[inline(always)]
fn tokens_f64(tokens: u64) -> f64 {
    if tokens >> 63 == 0 {
        tokens as i64 as f64
    } else {
        ((tokens >> 1 | tokens & 1) as i64 as f64) * 2.0
    }
}

/// Seconds rounded to whole microseconds; an infinite time (a zero rate) is a quarter of the
/// end of time, so that adding a few of them to an instant does not overflow.
fn secs_rounded(s: f64) -> SimDuration {
    us_rounded(s * US_PER_S as f64)
}

/// Microseconds rounded, an infinite time as in `secs_rounded`.
fn us_rounded(us: f64) -> SimDuration {
    if us.is_finite() {
        // Rounded to nearest without the software `round`.
        SimDuration::from_us(round_u64(us))
    } else {
        SimDuration::MAX / 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_latency_is_the_closed_form() {
        let p = LatencyParams {
            overhead_us: Dist::Const(500_000.0),
            prefill_rate: Dist::Const(20_000.0),
            cached_rate: Dist::Const(1_000_000.0),
            decode_rate: Dist::Const(50.0),
            ready_delay_us: Dist::Const(0.0),
            attention_rate: Dist::Const(f64::INFINITY),
        };
        let mut rng = crate::rng::stream(1, &[]);
        let w = Work { prefill_tokens: 50_000, cached_tokens: 100_000, output_tokens: 100 };
        let t = draw(&p, w, &mut rng);
        // 0.5 s + 50k/20k = 2.5 s + 100k/1M = 0.1 s -> 3.1 s; 100/50 = 2 s of decode.
        assert_eq!(t.ttft, SimDuration::from_ms(3_100));
        assert_eq!(t.decode, SimDuration::from_secs(2));
        // The attention term: 50k new tokens over a 150k context at 1.5e10 tokens^2/s adds
        // 50e3 * 150e3 / 1.5e10 = 0.5 s.
        let p = LatencyParams { attention_rate: Dist::Const(1.5e10), ..p };
        assert_eq!(draw(&p, w, &mut rng).ttft, SimDuration::from_ms(3_600));
    }

    /// Every term through its sampler, whatever the parameters: the reference `Shape::Prefill`
    /// must match bit for bit.
    fn drawn(p: &LatencyParams) -> Latency<'_> {
        let s = Sampler::new;
        Latency {
            shape: Shape::Drawn {
                overhead_us: s(&p.overhead_us),
                prefill_rate: s(&p.prefill_rate),
                cached_rate: s(&p.cached_rate),
                decode_rate: s(&p.decode_rate),
                ready_delay_us: s(&p.ready_delay_us),
                attention_rate: s(&p.attention_rate),
            },
        }
    }

    #[test]
    fn constants_hoisted_draw_what_every_sampler_draws() {
        let lognormal = Dist::LogNormal { median: 20_000.0, p90: 40_000.0 };
        let mut constant = LatencyParams { prefill_rate: lognormal, ..LatencyParams::default() };
        constant.overhead_us = Dist::Const(-3.0);
        constant.ready_delay_us = Dist::Const(1_234.5);
        let all_constant =
            LatencyParams { cached_rate: Dist::Const(0.0), ..LatencyParams::default() };
        for p in [LatencyParams::default(), constant, all_constant] {
            let hoisted = Latency::new(&p);
            assert!(matches!(hoisted.shape, Shape::Prefill { .. }));
            let (mut a, mut b) = (crate::rng::stream(7, &[]), crate::rng::stream(7, &[]));
            for i in 0..2_000u64 {
                let w =
                    Work { prefill_tokens: i * 37, cached_tokens: i % 3 * 999, output_tokens: i };
                assert_eq!(hoisted.draw(w, &mut a), drawn(&p).draw(w, &mut b), "{p:?} {w:?}");
            }
        }
    }

    /// `tokens_f64` is `as f64`: below 2^63, and above it, where a lost bit decides a tie.
    #[test]
    fn tokens_convert_as_u64_does() {
        use crate::rng::RngExt;
        let top = 1u64 << 63;
        let edges = [0, 1, (1 << 53) + 1, top - 1, top, top + 1, top + 1024, top + 1025, u64::MAX];
        for n in edges {
            assert_eq!(tokens_f64(n).to_bits(), (n as f64).to_bits(), "{n}");
        }
        let mut rng = crate::rng::stream(11, &[]);
        for _ in 0..1_000_000 {
            let n: u64 = rng.random();
            let m = n >> (n % 64);
            assert_eq!(tokens_f64(n).to_bits(), (n as f64).to_bits(), "{n}");
            assert_eq!(tokens_f64(m).to_bits(), (m as f64).to_bits(), "{m}");
        }
    }

    fn lognormal_prefill(median: f64) -> LatencyParams {
        let prefill_rate = Dist::LogNormal { median, p90: median * 2.0 };
        LatencyParams { prefill_rate, cached_rate: Dist::Const(1e6), ..LatencyParams::default() }
    }

    /// A draw is the documented formula at terms drawn in the documented order, each by its
    /// distribution's own `Dist::sample` (constants draw nothing), whatever the shape: hoisted
    /// constants, a drawn prefill rate, every term drawn, a zero rate (an infinite time).
    #[test]
    fn a_draw_is_the_formula_at_terms_drawn_in_order() {
        use rand::Rng;
        let lognormal = |median: f64| Dist::LogNormal { median, p90: median * 3.0 };
        let every_term = LatencyParams {
            overhead_us: lognormal(400_000.0),
            prefill_rate: lognormal(9_000.0),
            cached_rate: Dist::Uniform { low: 1e5, high: 1e6 },
            decode_rate: lognormal(60.0),
            ready_delay_us: Dist::Exp { mean: 20_000.0 },
            attention_rate: Dist::Uniform { low: 1e10, high: 1e11 },
        };
        let zero_cached = LatencyParams { cached_rate: Dist::Const(0.0), ..lognormal_prefill(2e4) };
        let us = |x: f64| if x.is_finite() { x.round().max(0.0) as u64 } else { u64::MAX };
        for p in [LatencyParams::default(), lognormal_prefill(20_000.0), every_term, zero_cached] {
            let latency = Latency::new(&p);
            let (mut a, mut b) = (crate::rng::stream(10, &[]), crate::rng::stream(10, &[]));
            for i in 0..100_000u64 {
                let w = Work {
                    prefill_tokens: i * 7 % 90_001,
                    cached_tokens: i % 5 * 20_011,
                    output_tokens: i % 300,
                };
                let t = latency.draw(w, &mut a);
                let overhead = us(p.overhead_us.sample(&mut b).max(0.0));
                let terms =
                    [&p.prefill_rate, &p.cached_rate, &p.decode_rate].map(|d| d.sample(&mut b));
                let ready = us(p.ready_delay_us.sample(&mut b));
                let attention = p.attention_rate.sample(&mut b);
                let [prefill, cached, decode] = terms;
                let secs = |tokens: u64, rate: f64| match tokens {
                    0 => 0.0,
                    _ if rate > 0.0 => tokens as f64 / rate,
                    _ => f64::INFINITY,
                };
                let context = (w.prefill_tokens + w.cached_tokens) as f64;
                let attention = match attention {
                    a if a.is_infinite() => 0.0,
                    a => secs(w.prefill_tokens, a) * context * 1e6,
                };
                let ttft = (secs(w.prefill_tokens, prefill) + secs(w.cached_tokens, cached)) * 1e6;
                let ttft = us(ttft + attention);
                let ttft = if ttft == u64::MAX {
                    SimDuration::MAX / 4
                } else {
                    SimDuration::from_us(ttft)
                };
                assert_eq!(t.ttft, SimDuration::from_us(overhead) + ttft, "{w:?}");
                assert_eq!(t.decode.as_us(), us(secs(w.output_tokens, decode) * 1e6), "{w:?}");
                assert_eq!(t.ready_delay.as_us(), ready, "{w:?}");
            }
            assert_eq!(a.next_u64(), b.next_u64(), "{p:?}: the same numbers consumed");
        }
    }

    #[test]
    fn defaults_reproduce_the_published_long_prompt_figures() {
        // the 2024 launch post (anthropic.com/news/prompt-caching): 100k tokens, 11.5 s uncached and 2.4 s cached (within 0.1 s);
        // 10k uncached 1.6 s.
        let p = LatencyParams::default();
        let mut rng = crate::rng::stream(1, &[]);
        let ttft = |prefill_tokens, cached_tokens, rng: &mut ChaCha8Rng| {
            let w = Work { prefill_tokens, cached_tokens, output_tokens: 0 };
            crate::time::secs(draw(&p, w, rng).ttft.as_us())
        };
        assert!((ttft(100_000, 0, &mut rng) - 11.5).abs() < 0.1);
        assert!((ttft(150, 100_000, &mut rng) - 2.4).abs() < 0.1);
        assert!((ttft(10_000, 0, &mut rng) - 1.6).abs() < 0.1);
    }
}
