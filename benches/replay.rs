//! Replay benchmark: the bundled 12,031-request Mooncake trace (3 MB), parse included, one
//! cache choice and the default what-if set (TTL 5m, 1h, none) in one pass. Target: < 100 ms.

use std::path::{Path, PathBuf};

use prefixsim::replay::{self, ReplaySettings, TraceFormat as Format};

fn main() {
    divan::main();
}

/// The bundled trace, `data/mooncake/conversation_trace.jsonl` in the repository.
fn trace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mooncake/conversation_trace.jsonl")
}

#[divan::bench(sample_count = 20)]
fn mooncake_one_choice(bencher: divan::Bencher) {
    let path = trace();
    let s = ReplaySettings::new(Format::Mooncake);
    bencher.bench(|| replay::replay(&path, &s, std::slice::from_ref(&s.cache)).unwrap().requests);
}

#[divan::bench(sample_count = 20)]
fn mooncake_what_if_three_ttls(bencher: divan::Bencher) {
    let path = trace();
    let s = ReplaySettings::new(Format::Mooncake);
    let choices: Vec<_> = ["cache.ttl=5m", "cache.ttl=1h", "cache.ttl=none"]
        .iter()
        .map(|a| {
            let mut c = s.clone();
            c.apply_set(a).unwrap();
            c.cache
        })
        .collect();
    bencher.bench(|| replay::replay(&path, &s, &choices).unwrap().requests);
}

#[divan::bench(sample_count = 20)]
fn mooncake_with_capacity(bencher: divan::Bencher) {
    let path = trace();
    let mut s = ReplaySettings::new(Format::Mooncake);
    s.apply_set("cache.capacity_tokens=10000000").unwrap();
    bencher.bench(|| replay::replay(&path, &s, std::slice::from_ref(&s.cache)).unwrap().requests);
}
