//! Benchmark: one turn of a long conversation, i.e. append one block to the prompt and serve it
//! (lookup + bill + refresh + write), at conversation lengths 10, 100 and 1,000 blocks.
//! The cost must not grow with the length: the chain hashes only the new block, the lookup
//! finds the previous turn's entry one position back, and one entry is written.
//!
//! Run: `cargo bench --bench cache`.

use divan::Bencher;
use prefixsim::cache::{Block, Breakpoint, Cache, EntryStore, Layer, Policy, Prompt, Ttl};
use prefixsim::config::preset;
use prefixsim::time::SimTime;
use std::cell::Cell;

fn main() {
    divan::main();
}

const LENGTHS: [usize; 3] = [10, 100, 1_000];

/// A conversation of `n` blocks (tools, system, then messages of 300 tokens) and a cache that
/// has served it (its entries ready).
fn warm(policy: Policy, n: usize) -> (Cache, Prompt) {
    let model = preset("claude-sonnet-4.5").unwrap();
    let mut cache = Cache::new(policy, &model, None).with_default_ttl(Ttl::None);
    let mut p = Prompt::with_capacity("bench", &model.name, n + 1);
    p.push(Block::synthetic(Layer::Tools, 8_000, 1));
    p.push(Block::synthetic(Layer::System, 4_000, 2));
    for i in 2..n {
        p.push(Block::synthetic(Layer::Messages, 300, i as u64 + 10));
    }
    cache.serve(&p, &breakpoints(&p), SimTime::ZERO, |_| SimTime::ZERO).unwrap();
    (cache, p)
}

/// Claude-Code-like breakpoints: end of system, last block.
fn breakpoints(p: &Prompt) -> [Breakpoint; 2] {
    [
        Breakpoint { index: 1, ttl: Ttl::OneHour },
        Breakpoint { index: p.len() - 1, ttl: Ttl::FiveMin },
    ]
}

fn turn(bencher: Bencher, policy: Policy, n: usize) {
    let (mut cache, base) = warm(policy, n);
    let next_id = Cell::new(1_000_000u64);
    let now = Cell::new(1u64);
    let fresh = || {
        let mut p = base.clone();
        p.reserve(1);
        p
    };
    bencher.with_inputs(fresh).bench_local_values(|mut p| {
        let id = next_id.get();
        next_id.set(id + 1);
        let t = SimTime::from_us(now.get());
        now.set(now.get() + 1);
        p.push(Block::synthetic(Layer::Messages, 300, id));
        let bps = breakpoints(&p);
        let usage = cache.serve(&p, &bps, t, |_| t).unwrap();
        assert!(usage.cache_read > 0);
        p
    });
}

#[divan::bench(args = LENGTHS)]
fn append_turn_every_block(bencher: Bencher, n: usize) {
    turn(bencher, Policy::EveryBlock, n);
}

#[divan::bench(args = LENGTHS)]
fn append_turn_anthropic(bencher: Bencher, n: usize) {
    turn(bencher, Policy::Anthropic, n);
}

/// The raw entry store with `u64` keys (trace replay): a hit-or-write per key.
#[divan::bench]
fn store_u64_lookup_write(bencher: Bencher) {
    let mut store: EntryStore<u64> = EntryStore::new(Some(1_000_000));
    let key = Cell::new(0u64);
    bencher.bench_local(|| {
        let k = key.get();
        key.set(k + 1);
        let probe_key = k / 2;
        let now = SimTime::from_us(k);
        if !store.touch(probe_key, now) {
            store.write(probe_key, 16, now, now, Ttl::FiveMin);
        }
    });
}
