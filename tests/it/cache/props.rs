//! Tests: properties of the cache under random prompts, breakpoints and times.

use super::*;

fn layer_of(k: u8) -> Layer {
    match k % 3 {
        0 => Layer::Tools,
        1 => Layer::System,
        _ => Layer::Messages,
    }
}

/// Blocks in layer order from random (layer, tokens, id) triples.
fn blocks_from(raw: &[(u8, u64, u64)]) -> Vec<Block> {
    let mut v: Vec<Block> =
        raw.iter().map(|&(l, t, id)| Block::synthetic(layer_of(l), t, id)).collect();
    v.sort_by_key(|b| b.layer);
    v
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        rng_seed: proptest::test_runner::RngSeed::Fixed(2),
        // Deterministic cases, no regression files written into the tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// The incremental chain (one block at a time, cloned at a fork point) equals the digest of
    /// all the chain's bytes hashed at once, at every boundary.
    #[test]
    fn incremental_digest_equals_from_scratch(
        raw in prop::collection::vec((0u8..3, 1u64..500, 0u64..4), 1..30),
        split in 0usize..30,
        params in (0u8..3, 0u8..3),
    ) {
        let blocks = blocks_from(&raw);
        let (sys, msg) = (Digest::of(&[params.0]), Digest::of(&[params.1]));
        let new_prompt = || {
            let mut p = Prompt::new("ws", "claude-sonnet-4.5");
            p.set_system_params(sys);
            p.set_message_params(msg);
            p
        };
        let split = split.min(blocks.len());
        let mut parent = new_prompt();
        blocks[..split].iter().for_each(|b| parent.push(*b));
        let mut fork = parent.clone();
        blocks[split..].iter().for_each(|b| fork.push(*b));
        for i in 0..blocks.len() {
            let reference = reference_prefix_key("ws", "claude-sonnet-4.5", sys, msg, &blocks, i);
            prop_assert_eq!(fork.prefix_key(i), reference);
        }
        let total: u64 = blocks.iter().map(|b| b.tokens).sum();
        prop_assert_eq!(fork.tokens(), total);
    }

    /// cache_read + cache_write + uncached = the prompt's tokens, for any sequence of requests
    /// over shared prefixes, any valid breakpoints and times, under both policies.
    #[test]
    fn usage_adds_up_to_the_prompt(
        requests in prop::collection::vec(
            (prop::collection::vec(0u64..3, 1..25), prop::collection::vec((0usize..25, any::<bool>()), 0..5), 0u64..2_000),
            1..12),
        every_block in any::<bool>(),
        min in 0u64..3_000,
    ) {
        let model = ModelParams { min_cacheable_tokens: min, ..any_length_model() };
        let policy = if every_block { Policy::EveryBlock } else { Policy::Anthropic };
        let mut cache = Cache::new(policy, &model, Some(20_000));
        let mut now = 0;
        for (ids, raw_bps, gap) in requests {
            now += gap * 1_000;
            let p = prompt_of(&model.name, &ids, 150);
            let bps = valid_breakpoints(&raw_bps, p.len());
            let u = cache.serve(&p, &bps, at(now), |u| at(now + 500 + u.uncached)).unwrap();
            prop_assert_eq!(u.cache_read + u.cache_write() + u.uncached, p.tokens());
        }
    }

    /// Repeating an identical request once its entries are ready hits everything cacheable:
    /// under every-block the whole prompt; under anthropic the prefix up to the last breakpoint
    /// (if it reaches the minimum), with nothing written.
    #[test]
    fn an_identical_request_after_ready_hits_everything_cacheable(
        ids in prop::collection::vec(0u64..1_000, 1..40),
        raw_bps in prop::collection::vec((0usize..40, any::<bool>()), 1..5),
        every_block in any::<bool>(),
    ) {
        let model = preset("claude-sonnet-4.5").unwrap();
        let policy = if every_block { Policy::EveryBlock } else { Policy::Anthropic };
        let mut cache = Cache::new(policy, &model, None);
        let p = prompt_of(&model.name, &ids, 90);
        let bps = valid_breakpoints(&raw_bps, p.len());
        cache.serve(&p, &bps, at(0), |_| at(3 * US_PER_S)).unwrap();
        let u = cache.serve(&p, &bps, at(3 * US_PER_S), |_| at(4 * US_PER_S)).unwrap();
        let cacheable = if every_block {
            p.tokens()
        } else {
            bps.last().map(|b| p.prefix_tokens(b.index)).filter(|&t| t >= model.min_cacheable_tokens).unwrap_or(0)
        };
        prop_assert_eq!(u.cache_read, cacheable);
        prop_assert_eq!(u.cache_write(), 0);
    }
}

/// Valid breakpoints from random (index, is_1h) pairs: in range, deduplicated, increasing, at
/// most 4, 1h ones first.
fn valid_breakpoints(raw: &[(usize, bool)], len: usize) -> Vec<Breakpoint> {
    let mut idx: Vec<(usize, bool)> = raw.iter().map(|&(i, h)| (i % len, h)).collect();
    idx.sort();
    idx.dedup_by_key(|p| p.0);
    idx.truncate(4);
    let ones = idx.iter().filter(|p| p.1).count();
    idx.iter()
        .enumerate()
        .map(|(k, &(index, _))| Breakpoint {
            index,
            ttl: if k < ones { Ttl::OneHour } else { Ttl::FiveMin },
        })
        .collect()
}

/// A naive reference of the entry store: a Vec scanned linearly, recency as a counter.
/// Same rules as docs/cache.md's entry lifecycle + the LRU: make room from the least recently
/// used, an expired one is reclaimed, a live one evicted; a write over a pending entry is
/// redundant.
#[derive(Default)]
struct NaiveStore {
    /// (key, tokens, ready_at, last_use, ttl_us, recency, state: 0 live, 1 evicted, 2 reclaimed)
    rows: Vec<(u64, u64, u64, u64, u64, u64, u8)>,
    clock: u64,
}

impl NaiveStore {
    fn probe(&self, key: u64, now: u64) -> (State, Option<(u64, u64)>) {
        match self.rows.iter().find(|r| r.0 == key) {
            None => (State::Absent, None),
            Some(r) if r.6 == 2 || now >= r.3 + r.4 => (State::Expired, Some((r.1, r.2))),
            Some(r) if r.6 == 1 => (State::Evicted, Some((r.1, r.2))),
            Some(r) if now < r.2 => (State::Pending, Some((r.1, r.2))),
            Some(r) => (State::Ready, Some((r.1, r.2))),
        }
    }

    fn write(&mut self, key: u64, tokens: u64, now: u64, ready: u64, cap: u64) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(r) = self.rows.iter_mut().find(|r| r.0 == key && r.6 == 0 && now < r.3 + r.4) {
            (r.2, r.3, r.5) = (r.2.min(ready.max(now)), r.3.max(now), clock);
            return;
        }
        self.rows.retain(|r| r.0 != key);
        loop {
            let used: u64 = self.rows.iter().filter(|r| r.6 == 0).map(|r| r.1).sum();
            if used + tokens <= cap {
                break;
            }
            let lru = self.rows.iter_mut().filter(|r| r.6 == 0).min_by_key(|r| r.5).unwrap();
            lru.6 = if now >= lru.3 + lru.4 { 2 } else { 1 };
        }
        self.rows.push((key, tokens, ready.max(now), now, 5 * US_PER_MIN, clock, 0));
    }

    fn touch(&mut self, key: u64, now: u64) {
        if self.probe(key, now).0 == State::Ready {
            self.clock += 1;
            let r = self.rows.iter_mut().find(|r| r.0 == key).unwrap();
            (r.3, r.5) = (r.3.max(now), self.clock);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// The slab + intrusive-list store agrees with the naive reference on every probe, for
    /// random writes and hits over 12 keys, a 5-minute TTL and a capacity of 1,000 tokens;
    /// and it never holds more than the capacity.
    #[test]
    fn entry_store_matches_a_naive_reference(
        ops in prop::collection::vec((0u64..12, 1u64..400, 0u64..90, 0u64..30, any::<bool>()), 1..120),
    ) {
        let cap = 1_000;
        let mut store: EntryStore<u64> = EntryStore::new(Some(cap));
        let mut naive = NaiveStore::default();
        let mut now = 0;
        for (key, tokens, gap_s, delay_s, is_write) in ops {
            now += gap_s * US_PER_S;
            let ready = now + delay_s * US_PER_S;
            if is_write {
                store.write(key, tokens, at(now), at(ready), Ttl::FiveMin);
                naive.write(key, tokens, now, ready, cap);
            } else {
                store.touch(key, at(now));
                naive.touch(key, now);
            }
            for k in 0..12 {
                let got = store.probe(k, at(now));
                prop_assert_eq!(got, naive.probe(k, now).0, "key {} at {}", k, now);
            }
        }
    }
}
