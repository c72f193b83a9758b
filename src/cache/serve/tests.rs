//! Serving under each policy: what a request reads, writes and refreshes.

use super::*;
use crate::cache::{Block, Layer};

/// The one-pass check accepts what the check breakpoint by breakpoint accepts, and refuses
/// with its error: every list of up to 5 breakpoints at positions 0..4 of the 4 TTL
/// kinds, on prompts of 0 to 5 blocks.
#[test]
fn breakpoints_are_accepted_as_breakpoint_by_breakpoint() {
    let ttls = [Ttl::OneHour, Ttl::FiveMin, Ttl::None, Ttl::Other(7)];
    let mut accepted = 0;
    for n in 0..=5u32 {
        for code in 0..16usize.pow(n) {
            let bps: Vec<_> = (0..n as usize)
                .map(|k| code / 16usize.pow(k as u32) % 16)
                .map(|d| Breakpoint { index: d % 4, ttl: ttls[d / 4] })
                .collect();
            for len in 0..=5 {
                let (fast, each) = (validate_breakpoints(&bps, len), breakpoint_error(&bps, len));
                assert_eq!(format!("{fast:?}"), format!("{each:?}"), "{bps:?} of {len}");
                accepted += usize::from(fast.is_ok());
            }
        }
    }
    assert!(accepted > 500, "{accepted} lists accepted");
}

/// `anthropic_hit` without `written`: every position of every window, from the highest
/// down.
fn hit_position_by_position(
    store: &EntryStore<Key>,
    prompt: &Prompt,
    breakpoints: &[Breakpoint],
    min: u64,
    now: SimTime,
) -> Option<Hit> {
    let mut probed = prompt.len();
    for bp in breakpoints.iter().rev() {
        let lowest = bp.index.saturating_sub(LOOKBACK_POSITIONS - 1);
        for index in (lowest..(bp.index + 1).min(probed)).rev() {
            if prompt.prefix_tokens(index) < min {
                return None;
            }
            if let Some(slot) = store.ready_slot(prompt.prefix_key(index), now) {
                return Some(Hit { index, slot });
            }
        }
        probed = probed.min(lowest);
    }
    None
}

/// The search by written bits finds what a search of every position finds: random prompts
/// (some blocks of no tokens; some past position 64, whose bits are shared), breakpoints,
/// minimums, written masks (with bits set at random besides), and entries ready, pending
/// or expired at random positions.
#[test]
fn a_search_by_written_bits_finds_what_the_search_position_by_position_finds() {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut draw = |n: u64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005);
        state = state.wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut outcomes = [0; 3];
    for case in 0..5000 {
        let len = 1 + draw(150) as usize;
        let mut prompt = Prompt::new("ws", "m");
        for id in 0..len as u64 {
            prompt.push(Block::synthetic(Layer::Messages, draw(3) * 100, case * 256 + id));
        }
        let mut store = EntryStore::new(None);
        // Exact in half the cases, else with bits set at random besides.
        let mut written = draw(2) * (draw(u64::MAX) & draw(u64::MAX));
        for i in 0..len {
            if draw(3) == 0 {
                written |= position_bit(i);
                let (ready, ttl) = (SimTime::from_us(draw(3) * 10), Ttl::Other(draw(40)));
                store.write(prompt.prefix_key(i), 1, SimTime::ZERO, ready, ttl);
            }
        }
        let mut breakpoints = Vec::new();
        for _ in 0..1 + draw(MAX_BREAKPOINTS as u64) {
            let floor = breakpoints.last().map_or(0, |b: &Breakpoint| b.index + 1);
            if floor < len {
                let index = floor + draw(((len - floor) as u64).min(50)) as usize;
                breakpoints.push(Breakpoint { index, ttl: Ttl::FiveMin });
            }
        }
        let (min, now) = (draw(5) * 100, SimTime::from_us(10 + draw(20)));
        let ask = ((&store, written), &prompt, &breakpoints[..], min, now);
        let found = anthropic_hit(ask.0, ask.1, ask.2, ask.3, ask.4).map(|h| (h.index, h.slot));
        let each = hit_position_by_position(&store, ask.1, ask.2, ask.3, ask.4);
        let each = each.map(|h| (h.index, h.slot));
        assert_eq!(found, each, "case {case}: {breakpoints:?} of {len}, min {min}");
        outcomes[match each {
            Some((index, _)) if index >= 63 => 2,
            Some(_) => 1,
            None => 0,
        }] += 1;
    }
    // Misses, hits below 63 and hits from 63 on.
    assert!(outcomes.iter().all(|&n| n > 20), "every outcome is exercised: {outcomes:?}");
}
