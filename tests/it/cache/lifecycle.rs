//! Tests: an entry's life in the cache (docs/cache.md): readable from its writer's first token,
//! expiring at its last use plus its TTL, refreshed by hits, and evicted least recently used
//! when the store is full.

use super::*;

/// An entry is pending until the writer's first response begins (here: sent at 0, ready at
/// 2 s). A lookup at 2 s - 1 us misses and writes again (a redundant write); at exactly 2 s it
/// hits. The redundant writer does not delay readiness (the earlier ready time is kept).
#[test]
fn a_lookup_before_the_first_token_misses_and_after_it_hits() {
    let model = any_length_model();
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    let p = prompt_of(&model.name, &[1, 2, 3], 1_000);
    let u = cache.serve(&p, &[bp(2)], at(0), |_| at(2 * US_PER_S)).unwrap();
    assert_eq!((u.cache_write_5m, u.redundant_writes), (3_000, 0));
    let before = 2 * US_PER_S - 1;
    let u = cache.serve(&p, &[bp(2)], at(before), |_| at(before + 10 * US_PER_S)).unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m, u.redundant_writes), (0, 3_000, 1));
    let u = cache.serve(&p, &[bp(2)], at(2 * US_PER_S), instant(2 * US_PER_S)).unwrap();
    assert_eq!((u.cache_read, u.cache_write(), u.redundant_writes), (3_000, 0, 0));
}

/// Alive on [last_use, last_use + ttl): at exactly last_use + 5 min the entry has expired.
/// The TTL slides from the START of the last request that used it: written at 0, read by a
/// request sent at 100 s (however long that request then takes), alive until 100 s + 300 s.
#[test]
fn expiry_is_exactly_at_last_use_plus_ttl() {
    let model = any_length_model();
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    let p = prompt_of(&model.name, &[1, 2], 1_000);
    let key = p.prefix_key(1);
    cache.serve(&p, &[bp(1)], at(0), |_| at(US_PER_S)).unwrap();
    let t1 = 100 * US_PER_S;
    let u = cache.serve(&p, &[bp(1)], at(t1), |_| at(t1 + 200 * US_PER_S)).unwrap();
    assert_eq!(u.cache_read, 2_000);
    let end = t1 + 5 * US_PER_MIN;
    assert_eq!(cache.peek(&p, &[bp(1)], at(end - 1)).unwrap().cache_read, 2_000);
    assert_eq!(cache.peek(&p, &[bp(1)], at(end)).unwrap().cache_read, 0);
    assert_eq!(cache.store().probe(key, at(end - 1)), State::Ready);
    assert_eq!(cache.store().probe(key, at(end)), State::Expired);
    let u = cache.serve(&p, &[bp(1)], at(end), instant(end)).unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m, u.redundant_writes), (0, 2_000, 0));
}

/// A hit refreshes the ready entries of the request's breakpoints inside the hit prefix: a
/// conversation (breakpoints on block 2 and the last block) is read at 4 min and 8 min; a fork
/// with other messages at 11 min still reads block 2's entry, last used at 8 min (alive until
/// 13 min), though it was written at 0 (it would have expired at 5 min without the refresh).
#[test]
fn a_hit_refreshes_the_breakpoints_it_covers() {
    let model = any_length_model();
    let mut cache = Cache::new(Policy::Anthropic, &model, None);
    let conv = prompt_of(&model.name, &[1, 2, 3, 4], 1_000);
    cache.serve(&conv, &[bp(1), bp(3)], at(0), instant(0)).unwrap();
    for t in [4 * US_PER_MIN, 8 * US_PER_MIN] {
        assert_eq!(
            cache.serve(&conv, &[bp(1), bp(3)], at(t), instant(t)).unwrap().cache_read,
            4_000
        );
    }
    let fork = prompt_of(&model.name, &[1, 2, 7, 8], 1_000);
    let t = 11 * US_PER_MIN;
    let u = cache.serve(&fork, &[bp(1), bp(3)], at(t), instant(t)).unwrap();
    assert_eq!((u.cache_read, u.cache_write_5m), (2_000, 2_000));
}

/// A 1h entry survives 5 min and expires at exactly 1 h; a no-TTL entry never expires.
#[test]
fn one_hour_and_no_ttl_entries() {
    let mut store: EntryStore<u64> = EntryStore::new(None);
    store.write(1, 10, at(0), at(0), Ttl::OneHour);
    store.write(2, 10, at(0), at(0), Ttl::None);
    assert_eq!(store.probe(1, at(3_600 * US_PER_S - 1)), State::Ready);
    assert_eq!(store.probe(1, at(3_600 * US_PER_S)), State::Expired);
    assert_eq!(store.probe(2, at(u64::MAX - 1)), State::Ready);
}

// ---------------------------------------------------------------- entry store: LRU capacity

/// The keys of 1 to 5 that are ready at `t`.
fn ready(store: &EntryStore<u64>, t: u64) -> Vec<u64> {
    (1..=5).filter(|&k| store.probe(k, at(t)) == State::Ready).collect()
}

/// Capacity 300 tokens, entries of 100: writing a 4th evicts the least recently used. Keys 1,
/// 2, 3 written at t = 0, 1, 2; key 1 read at t = 3 -> LRU order (oldest last) 1, 3, 2; key 4
/// evicts 2, key 5 evicts 3. Evicted keys probe as `Evicted` until their TTL would have run
/// out (then `Expired`: not a capacity miss), never-written ones as `Absent`.
#[test]
fn capacity_evicts_the_least_recently_used() {
    let mut store: EntryStore<u64> = EntryStore::new(Some(300));
    for (k, t) in [(1, 0), (2, 1), (3, 2)] {
        assert_eq!(store.write(k, 100, at(t), at(t), Ttl::FiveMin), WriteOutcome::New);
    }
    assert!(store.touch(1, at(3)));
    store.write(4, 100, at(4), at(4), Ttl::FiveMin);
    assert_eq!(ready(&store, 4), vec![1, 3, 4]);
    assert_eq!(store.probe(2, at(5)), State::Evicted);
    store.write(5, 100, at(5), at(5), Ttl::FiveMin);
    assert_eq!(ready(&store, 5), vec![1, 4, 5]);
    assert_eq!(store.probe(3, at(6)), State::Evicted);
    assert_eq!(store.probe(99, at(6)), State::Absent);
    assert_eq!(store.probe(3, at(2 + 5 * US_PER_MIN - 1)), State::Evicted);
    assert_eq!(store.probe(3, at(2 + 5 * US_PER_MIN)), State::Expired);
    // Rewriting an evicted key stores it again (evicting the now-least-recent key 1).
    assert_eq!(store.write(2, 100, at(7), at(7), Ttl::FiveMin), WriteOutcome::Rewritten);
    assert_eq!(ready(&store, 7), vec![2, 4, 5]);
}

/// Room is made from expired entries first when they are at the tail: those are `reclaimed`,
/// not evictions, and probe as `Expired`. An entry larger than the capacity is not stored.
#[test]
fn capacity_reclaims_expired_entries_before_evicting() {
    let mut store: EntryStore<u64> = EntryStore::new(Some(200));
    store.write(1, 100, at(0), at(0), Ttl::FiveMin);
    store.write(2, 100, at(10 * US_PER_MIN), at(10 * US_PER_MIN), Ttl::FiveMin);
    store.write(3, 100, at(11 * US_PER_MIN), at(11 * US_PER_MIN), Ttl::FiveMin);
    assert_eq!(store.probe(1, at(11 * US_PER_MIN)), State::Expired);
    assert_eq!(ready(&store, 11 * US_PER_MIN), vec![2, 3]);
    assert_eq!(
        store.write(4, 500, at(12 * US_PER_MIN), at(0), Ttl::FiveMin),
        WriteOutcome::TooLarge
    );
    assert_eq!(store.probe(4, at(12 * US_PER_MIN)), State::Evicted);
    assert_eq!(ready(&store, 12 * US_PER_MIN), vec![2, 3]);
}

/// A probe distinguishes pending from ready; the entry keeps its earliest ready time.
#[test]
fn probe_classifies_pending_entries() {
    let mut store: EntryStore<u64> = EntryStore::new(None);
    store.write(7, 10, at(100), at(500), Ttl::FiveMin);
    assert_eq!(store.probe(7, at(499)), State::Pending);
    assert!(!store.touch(7, at(499)));
    assert_eq!(store.probe(7, at(500)), State::Ready);
    assert_eq!(store.write(7, 10, at(200), at(900), Ttl::FiveMin), WriteOutcome::Redundant);
    assert_eq!(store.probe(7, at(500)), State::Ready, "earlier ready time kept");
}
