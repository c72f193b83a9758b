//! Tests: trace replay (`prefixsim replay`). Hand-made tiny traces with answers derived by hand
//! (in the comments), the bundled traces against independent computations written here, and
//! malformed traces through the binary (exit 2, the line named, nothing on stdout).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use prefixsim::replay::{self, ChoiceStats, Format, ReplaySettings};
use prefixsim::time::{SimDuration, SimTime};

/// The bundled data: `data/` in the repository (each set with its NOTICE.md and LICENSE).
fn data(name: &str) -> String {
    format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn mooncake() -> String {
    data("mooncake/conversation_trace.jsonl")
}

fn claude_code() -> String {
    data("claude-code-traces")
}

/// A fresh directory for one test.
fn tmp_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Write a Mooncake-style JSONL trace: (timestamp ms, input tokens, ids).
fn mooncake_file(name: &str, rows: &[(f64, u64, &[u64])]) -> PathBuf {
    let mut text = String::new();
    for (t, input, ids) in rows {
        let ids: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        text += &format!(
            "{{\"timestamp\": {t}, \"input_length\": {input}, \"output_length\": 0, \"hash_ids\": [{}]}}\n",
            ids.join(", ")
        );
    }
    let p = tmp_dir(name).join("trace.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

/// Settings for a hand-made Mooncake trace with 4-token blocks.
fn settings(sets: &[&str]) -> ReplaySettings {
    let mut s = ReplaySettings::new(Format::Mooncake);
    s.apply_set("block_size=4").unwrap();
    // The closed forms below are written for a constant 500 ms overhead.
    s.apply_set("latency.preset=launch-2024").unwrap();
    for a in sets {
        s.apply_set(a).unwrap();
    }
    s
}

fn run_one(path: &Path, s: &ReplaySettings) -> ChoiceStats {
    let r = replay::replay(path, s, std::slice::from_ref(&s.cache)).unwrap();
    r.choices.into_iter().next().unwrap().1
}

/// Index of each miss cause in `miss_tokens`.
const EXPIRED: usize = 0;
const CAPACITY: usize = 1;
const PENDING: usize = 2;
const NEVER: usize = 3;

#[test]
fn expiry_is_exactly_at_the_ttl_from_the_last_use() {
    // r1 at 0 writes [1, 2]; r2 at 299.999 s (< 300 s) hits both and refreshes them; r3 at
    // 599.999 s = r2 + 300 s exactly: expired (alive on [last_use, last_use + ttl)).
    let p = mooncake_file(
        "expiry",
        &[(0.0, 8, &[1, 2]), (299_999.0, 8, &[1, 2]), (599_999.0, 8, &[1, 2])],
    );
    let s = run_one(&p, &settings(&["cache.ttl=5m"]).instant());
    assert_eq!((s.account.cache_read, s.account.cache_write()), (8, 16));
    assert_eq!(s.miss_tokens, [8, 0, 0, 8]);
    // Cost at claude-sonnet-4.5: $3/MTok * (16 * 1.25 + 8 * 0.1) tokens = $62.4e-6.
    let model = prefixsim::cache::preset("claude-sonnet-4.5").unwrap();
    assert!((replay::prices::cost_usd(&s.account, &model) - 62.4e-6).abs() < 1e-12);
    // One microsecond earlier, r3 would hit: 1 ms earlier here.
    let p = mooncake_file(
        "expiry2",
        &[(0.0, 8, &[1, 2]), (299_999.0, 8, &[1, 2]), (599_998.0, 8, &[1, 2])],
    );
    assert_eq!(run_one(&p, &settings(&["cache.ttl=5m"]).instant()).account.cache_read, 16);
    // 1h and no TTL keep the entries: r2 and r3 hit; 1h writes are billed as 1h writes.
    let one_hour = run_one(&p, &settings(&["cache.ttl=1h"]).instant());
    assert_eq!((one_hour.account.cache_read, one_hour.account.cache_write_1h), (16, 8));
    let none = run_one(&p, &settings(&["cache.ttl=none"]).instant());
    assert_eq!((none.account.cache_read, none.account.cache_write_5m), (16, 8));
}

#[test]
fn trailing_partial_block_is_uncached() {
    // 10 tokens in 4-token blocks: ceil(10/4) = 3 ids, the third partial (2 tokens): never
    // cached, so the repeat reads 8 and pays 2 uncached each time.
    let p = mooncake_file("partial", &[(0.0, 10, &[1, 2, 3]), (1000.0, 10, &[1, 2, 3])]);
    let s = run_one(&p, &settings(&[]).instant());
    assert_eq!((s.account.cache_read, s.account.cache_write(), s.account.uncached), (8, 8, 4));
}

#[test]
fn capacity_evicts_least_recently_used_deepest_block_first() {
    // Capacity 8 tokens = 2 blocks, no TTL. r1 [1,2] fills it; r2 [3] evicts one block: the
    // deepest of r1 (2), as vLLM frees a request's blocks last-first. r3 [1,2] reads 1 (4
    // tokens), misses 2 (capacity), and writing 2 evicts 3; r4 [3] misses (capacity).
    // A plain insertion-order LRU would have evicted block 1 and r3 would read nothing.
    let p = mooncake_file(
        "capacity",
        &[(0.0, 8, &[1, 2]), (1000.0, 4, &[3]), (2000.0, 8, &[1, 2]), (3000.0, 4, &[3])],
    );
    let s = run_one(&p, &settings(&["cache.ttl=none", "cache.capacity_tokens=8"]).instant());
    assert_eq!(s.account.cache_read, 4);
    assert_eq!(s.account.input(), 24);
    assert_eq!(s.miss_tokens, [0, 8, 0, 12]);
    // With room for everything, r3 and r4 hit: 12 of 24 tokens.
    let s = run_one(&p, &settings(&["cache.ttl=none", "cache.capacity_tokens=12"]).instant());
    assert_eq!((s.account.cache_read, s.miss_tokens[CAPACITY]), (12, 0));
}

#[test]
fn an_expired_block_is_not_a_capacity_miss() {
    // Capacity 4 (1 block), TTL 5m: r2 [2] evicts block 1; r3 [1] at 400 s would have found
    // block 1 expired anyway (last used at 0): the miss is charged to expiry.
    let p = mooncake_file("exp_cap", &[(0.0, 4, &[1]), (1000.0, 4, &[2]), (400_000.0, 4, &[1])]);
    let s = run_one(&p, &settings(&["cache.capacity_tokens=4"]).instant());
    assert_eq!(s.miss_tokens[EXPIRED], 4);
    assert_eq!(s.miss_tokens[CAPACITY], 0);
}

#[test]
fn pending_entry_misses_until_the_writers_first_token() {
    // Latency 500 ms + 8 tokens / 20,000 tok/s: ttft = 500.4 ms. r1 at 0 writes
    // [1,2], readable at 500.4 ms. r2 at 500 ms finds them pending: misses 8 tokens, two
    // redundant writes (the entries keep the earlier ready time). r3 at exactly 500.4 ms hits.
    let p =
        mooncake_file("pending", &[(0.0, 8, &[1, 2]), (500.0, 8, &[1, 2]), (500.4, 8, &[1, 2])]);
    let fast = "latency.prefill_rate=const(20000)";
    let s = run_one(&p, &settings(&[fast]));
    assert_eq!(s.account.cache_read, 8);
    assert_eq!(s.miss_tokens[PENDING], 8);
    assert_eq!(s.miss_tokens[NEVER], 8);
    assert_eq!(s.redundant_writes, 2);
    // A ready delay of 1 ms pushes readability to 501.4 ms: r3 misses too.
    let s = run_one(&p, &settings(&[fast, "latency.ready_delay=1ms"]));
    assert_eq!((s.account.cache_read, s.miss_tokens[PENDING]), (0, 16));
    // Instant ready: r2 and r3 hit.
    let s = run_one(&p, &settings(&[]).instant());
    assert_eq!((s.account.cache_read, s.redundant_writes), (16, 0));
}

/// A one-conversation claude-code file of `(t s, ttft s, api_time s)` requests, each sending
/// the same ten 64-token blocks (640 tokens, no trailing tokens) to Opus 4.5.
fn timed_conversation(name: &str, requests: &[(f64, Option<f64>, Option<f64>)]) -> PathBuf {
    let field = |k: &str, v: Option<f64>| v.map_or(String::new(), |v| format!(r#", "{k}": {v}"#));
    let lines: Vec<String> = requests
        .iter()
        .map(|&(t, ttft, api)| {
            format!(
                r#"{{"t": {t}, "type": "n", "model": "claude-opus-4-5-20251101", "in": 640, "out": 5,
                    "hash_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]{}{}}}"#,
                field("ttft", ttft),
                field("api_time", api)
            )
        })
        .collect();
    let text = format!(r#"{{"block_size": 64, "requests": [{}]}}"#, lines.join(",\n"));
    let p = tmp_dir(name).join("conv.json");
    std::fs::write(&p, text).unwrap();
    p
}

/// Readiness from the trace's own timing, in closed form. The latency model is made slow:
/// 500 ms + 640 tokens / 64 tok/s = 10.5 s of model TTFT for a writer of the ten blocks.
/// - Measured ttft 2 s (api_time 4 s): the entry is readable at 2 s. A reader at 1.999 s finds
///   it pending (640 pending tokens, ten redundant writes, readable from its own model TTFT
///   at 12.499 s, so the entry keeps 2 s); one at 2 s hits; one at 5 s, after the response ended
///   but before the model's 10.5 s, hits (trace_0279's request 82: the model said pending).
/// - No ttft, api_time 4 s: readable at min(10.5, 4) = 4 s: pending at 3.999 s, a hit at 4 s.
/// - No ttft, api_time 20 s: min(10.5, 20) = 10.5 s: pending at 10.499 s, a hit at 10.5 s.
/// - Neither: the model's 10.5 s. `--instant-ready`: everything after the writer hits.
#[test]
fn entries_are_readable_at_the_writers_measured_ttft_capped_by_its_api_time() {
    const TTFT: usize = 0;
    const API_TIME: usize = 1;
    const MODEL: usize = 2;
    let mut s = ReplaySettings::new(Format::ClaudeCode);
    // Model TTFT = 500 ms + 640 tokens / 64 tok/s = 10.5 s, for every model.
    s.apply_set("latency.preset=launch-2024").unwrap();
    s.apply_set("latency.prefill_rate=const(64)").unwrap();
    let run = |name: &str, reqs: &[(f64, Option<f64>, Option<f64>)]| {
        run_one(&timed_conversation(name, reqs), &s)
    };
    let w = (0.0, Some(2.0), Some(4.0));
    let st = run("measured_ttft", &[w, (1.999, None, None), (2.0, None, None), (5.0, None, None)]);
    assert_eq!(
        (st.miss_tokens[PENDING], st.redundant_writes, st.account.cache_read),
        (640, 10, 1280)
    );
    assert_eq!(st.ready_tokens[TTFT], 640);
    assert_eq!(st.ready_tokens[MODEL], 640, "the pending reader's own write");
    let st = run("after_response_end", &[w, (5.0, None, None)]);
    assert_eq!((st.account.cache_read, st.miss_tokens[PENDING]), (640, 0));
    let capped = (0.0, None, Some(4.0));
    let st = run("api_time_cap", &[capped, (3.999, None, None), (4.0, None, None)]);
    assert_eq!((st.miss_tokens[PENDING], st.account.cache_read), (640, 640));
    assert_eq!(st.ready_tokens[API_TIME], 640);
    let late_end = (0.0, None, Some(20.0));
    let st = run("model_earlier", &[late_end, (10.499, None, None), (10.5, None, None)]);
    assert_eq!((st.miss_tokens[PENDING], st.account.cache_read), (640, 640));
    assert_eq!(st.ready_tokens[MODEL], 1280);
    let untimed = (0.0, None, None);
    let st = run("model_only", &[untimed, (10.499, None, None), (10.5, None, None)]);
    assert_eq!((st.miss_tokens[PENDING], st.account.cache_read), (640, 640));
    let mut instant = s.clone();
    instant.instant_ready = true;
    let p = timed_conversation("instant", &[untimed, (0.001, None, None)]);
    let st = run_one(&p, &instant);
    assert_eq!((st.account.cache_read, st.ready_tokens[3]), (640, 640));
}

/// The case that motivated it: in trace_0279 request 81 (sent at 3,237 s) rewrites 124,800
/// expired tokens and its response ends 4.89 s later; request 82 follows at 3,251 s. The
/// 2024 latency model alone made the entries pending until 3,251.2 s (500 ms + 124,808 tokens
/// at 9,100 tok/s): 124,800 pending tokens and 1,950 redundant writes. From the measured
/// api_time they are readable at 3,241.89 s: no pending miss is left in the file.
#[test]
fn trace_0279_request_82_reads_what_request_81_wrote() {
    let file = PathBuf::from(claude_code()).join("trace_0279.json");
    let s = ReplaySettings::new(Format::ClaudeCode);
    let st = run_one(&file, &s);
    assert_eq!((st.miss_tokens[PENDING], st.redundant_writes), (0, 0));
    // The same file with its timing fields dropped: the model alone leaves the pending miss.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    fn strip(entries: &mut serde_json::Value) {
        for e in entries.as_array_mut().unwrap() {
            let o = e.as_object_mut().unwrap();
            o.remove("ttft");
            o.remove("api_time");
            if let Some(inner) = o.get_mut("requests") {
                strip(inner);
            }
        }
    }
    strip(&mut v["requests"]);
    let untimed = tmp_dir("trace_0279_untimed").join("trace_0279.json");
    std::fs::write(&untimed, v.to_string()).unwrap();
    let mut launch = s.clone();
    launch.apply_set("latency.preset=launch-2024").unwrap();
    let st = run_one(&untimed, &launch);
    assert_eq!((st.miss_tokens[PENDING], st.redundant_writes), (124_800, 1_950));
}

trait Instant {
    fn instant(self) -> Self;
}
impl Instant for ReplaySettings {
    fn instant(mut self) -> Self {
        self.instant_ready = true;
        self
    }
}

/// Claude Code: sibling sub-agents launched together share their first blocks. Each entry's
/// `t` is when it finished: sibling A (t 100 s, 40 s) and B (t 200 s, 140 s) both start at
/// 60 s. Their first requests share [10, 11] at the same instant: B finds A's entries pending.
/// (Placing sub-agent requests at `entry.t + request.t` would put B 100 s after A: a hit.)
#[test]
fn claude_code_subagents_start_at_t_minus_duration() {
    let dir = tmp_dir("cc_siblings");
    let sub = |t: f64, dur: u64| {
        format!(
            r#"{{"t": {t}, "type": "subagent", "duration_ms": {dur}, "requests": [
              {{"t": 0.0, "type": "n", "model": "claude-haiku-4-5", "in": 130, "out": 10, "hash_ids": [10, 11]}}]}}"#
        )
    };
    let text = format!(
        r#"{{"id": "conv", "block_size": 64, "hash_id_scope": "local", "requests": [
          {{"t": 0.0, "type": "n", "model": "claude-opus-4-5", "in": 128, "out": 10, "hash_ids": [1, 2]}},
          {}, {},
          {{"t": 250.0, "type": "n", "model": "claude-opus-4-5", "in": 200, "out": 10, "hash_ids": [1, 2, 3]}}]}}"#,
        sub(100.0, 40_000),
        sub(200.0, 140_000)
    );
    std::fs::write(dir.join("a.json"), text).unwrap();
    let mut s = ReplaySettings::new(Format::ClaudeCode);
    s.apply_set("cache.ttl=1h").unwrap();
    let r = replay::replay(&dir, &s, std::slice::from_ref(&s.cache)).unwrap();
    let st = &r.choices[0].1;
    // Parent: 128 written, then 128 read + 64 written + 8 uncached (200 % 64). Sub-agents:
    // A writes 128 (+2 uncached), B misses 128 pending (+2 uncached).
    assert_eq!(st.account.cache_read, 128);
    assert_eq!(st.miss_tokens[PENDING], 128);
    assert_eq!(st.account.uncached, 8 + 2 + 2);
    assert_eq!(r.conversations, vec!["conv".to_string()]);
    assert_eq!(st.conversations[0].requests, 4);
}

/// Ids are per file (`local` scope) and caches per model: equal ids in another file or sent
/// to another model never hit.
#[test]
fn claude_code_ids_are_scoped_by_file_and_model() {
    let dir = tmp_dir("cc_scope");
    let conv = |model: &str| {
        format!(
            r#"{{"block_size": 64, "hash_id_scope": "local", "requests": [
              {{"t": 0.0, "type": "n", "model": "{model}", "in": 128, "hash_ids": [1, 2]}},
              {{"t": 10.0, "type": "n", "model": "other", "in": 128, "hash_ids": [1, 2]}},
              {{"t": 20.0, "type": "n", "model": "{model}", "in": 128, "hash_ids": [1, 2]}}]}}"#
        )
    };
    std::fs::write(dir.join("a.json"), conv("m")).unwrap();
    std::fs::write(dir.join("b.json"), conv("m")).unwrap();
    let mut s = ReplaySettings::new(Format::ClaudeCode);
    s.apply_set("model=claude-sonnet-4.5").unwrap(); // `m` and `other` have no preset
    s.instant_ready = true;
    let r = replay::replay(&dir, &s, std::slice::from_ref(&s.cache)).unwrap();
    // Per file only the third request hits (128 of 384 tokens); b.json does not see a.json's.
    let st = &r.choices[0].1;
    assert_eq!(st.account.cache_read, 256);
    assert_eq!(
        st.conversations.iter().map(|c| c.account.cache_read).collect::<Vec<_>>(),
        vec![128, 128]
    );
    assert_eq!(r.conversations, vec!["a".to_string(), "b".to_string()]);
}

/// One request for the independent computations: its full blocks' keys and input tokens.
struct Req {
    keys: Vec<(u64, u64)>,
    input: u64,
}

/// `model=per-request` (claude-code's default): each request pays its own model's preset (the
/// trace's dated names mapped to presets); an unknown model is an input error. One 64-token
/// block written at the 5m price: opus 4.5 $5/MTok * 64 * 1.25 = $400e-6; `model=
/// claude-sonnet-4.5` prices it at $3 * 80 = $240e-6.
#[test]
fn per_request_prices_use_each_requests_model() {
    let dir = tmp_dir("cc_prices");
    let conv = |model: &str| {
        format!(
            r#"{{"block_size": 64, "requests": [
              {{"t": 0.0, "type": "n", "model": "{model}", "in": 64, "hash_ids": [1]}}]}}"#
        )
    };
    let file = dir.join("a.json");
    std::fs::write(&file, conv("claude-opus-4-5-20251101")).unwrap();
    let mut s = ReplaySettings::new(Format::ClaudeCode);
    assert!((run_one(&file, &s).cost_usd - 400e-6).abs() < 1e-12);
    s.apply_set("model=claude-sonnet-4.5").unwrap();
    assert!((run_one(&file, &s).cost_usd - 240e-6).abs() < 1e-12);
    s.apply_set("model=per-request").unwrap();
    assert!((run_one(&file, &s).cost_usd - 400e-6).abs() < 1e-12);
    std::fs::write(&file, conv("gpt-4o")).unwrap();
    let e = replay::replay(&file, &s, std::slice::from_ref(&s.cache)).unwrap_err();
    assert!(e.to_string().contains("`gpt-4o`"), "{e}");
}

/// Independent computation: an unbounded, never-expiring, instantly-ready block cache is a set
/// of seen ids; each request reads its longest prefix of full blocks already in the set.
fn seen_set_hits(requests: &[Req], block_tokens: u64) -> (u64, u64) {
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let (mut read, mut input) = (0, 0);
    for r in requests {
        let hit = r.keys.iter().take_while(|k| seen.contains(k)).count() as u64;
        read += hit * block_tokens;
        input += r.input;
        seen.extend(r.keys.iter().copied());
    }
    (read, input)
}

fn unbounded(format: Format) -> ReplaySettings {
    let mut s = ReplaySettings::new(format);
    s.apply_set("cache.ttl=none").unwrap();
    s.instant_ready = true;
    s
}

#[test]
fn bundled_mooncake_matches_a_seen_set() {
    let mut reqs = Vec::new();
    for line in std::fs::read_to_string(mooncake()).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let input = v["input_length"].as_u64().unwrap();
        let mut ids: Vec<u64> =
            v["hash_ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        if !input.is_multiple_of(512) {
            ids.pop(); // the partial last block is not cached
        }
        reqs.push(Req { keys: ids.into_iter().map(|id| (0, id)).collect(), input });
    }
    assert_eq!(reqs.len(), 12_031);
    let (read, input) = seen_set_hits(&reqs, 512);
    let r = replay::replay(
        Path::new(&mooncake()),
        &unbounded(Format::Mooncake),
        &[unbounded(Format::Mooncake).cache],
    )
    .unwrap();
    let st = &r.choices[0].1;
    assert_eq!((st.account.cache_read, st.account.input()), (read, input));
    assert_eq!(r.requests, 12_031);
    assert!(st.account.hit_rate() > 0.3, "{}", st.account.hit_rate());
}

/// Absolute send times of one claude-code file, computed independently: parent `t`; sub-agent
/// request `(entry.t - duration_ms/1000) + request.t`. Keys: (model, id) within the file.
fn claude_code_requests(file: &Path, scope: u64) -> Vec<Req> {
    fn walk(entries: &[serde_json::Value], base: f64, out: &mut Vec<(f64, String, Vec<u64>, u64)>) {
        for e in entries {
            let t = e["t"].as_f64().unwrap();
            if e["type"] == "subagent" {
                let start = t - e["duration_ms"].as_f64().unwrap_or(0.0) / 1000.0;
                walk(e["requests"].as_array().unwrap(), base + start, out);
            } else {
                let ids =
                    e["hash_ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
                out.push((
                    base + t,
                    e["model"].as_str().unwrap().to_string(),
                    ids,
                    e["in"].as_u64().unwrap(),
                ));
            }
        }
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let mut flat = Vec::new();
    walk(v["requests"].as_array().unwrap(), 0.0, &mut flat);
    flat.sort_by(|a, b| a.0.total_cmp(&b.0)); // stable: ties keep file order
    let mut models: HashMap<String, u64> = HashMap::new();
    flat.into_iter()
        .map(|(_t, model, ids, input)| {
            let n = models.len() as u64;
            let m = *models.entry(model).or_insert(n);
            let keys = ids.into_iter().map(|id| ((scope << 32) | m, id)).collect();
            Req { keys, input }
        })
        .collect()
}

#[test]
fn bundled_claude_code_traces_match_a_seen_set() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(claude_code())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 12);
    let mut reqs: Vec<Req> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        reqs.extend(claude_code_requests(f, i as u64));
    }
    assert_eq!(reqs.len(), 752); // the NOTICE's table
    let (read, input) = seen_set_hits(&reqs, 64);
    let s = unbounded(Format::ClaudeCode);
    let r = replay::replay(Path::new(&claude_code()), &s, std::slice::from_ref(&s.cache)).unwrap();
    let st = &r.choices[0].1;
    assert_eq!((st.account.cache_read, st.account.input()), (read, input));
    assert_eq!(r.conversations.len(), 12);
    // One file replays the same as the directory's share of it.
    let one = replay::replay(&files[0], &s, std::slice::from_ref(&s.cache)).unwrap();
    assert_eq!(one.choices[0].1.account, st.conversations[0].account);
}

/// Independent computation with the cache core's `EntryStore` (TTL 5m, latency model): per
/// request, the leading ready blocks hit (and are touched), every later block is written,
/// readable at `send + 500 ms + (written + uncached) / 20,000 tok/s + read / 1M tok/s` (the
/// default latency model in closed form). Hit tokens and redundant writes must match.
#[test]
fn bundled_mooncake_matches_the_cache_core_entry_store() {
    use prefixsim::cache::{EntryStore, Ttl, WriteOutcome};
    let mut store: EntryStore<u64> = EntryStore::new(None);
    let (mut read, mut redundant) = (0u64, 0u64);
    for line in std::fs::read_to_string(mooncake()).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let now = SimTime::from_us((v["timestamp"].as_f64().unwrap() * 1000.0).round() as u64);
        let input = v["input_length"].as_u64().unwrap();
        let mut ids: Vec<u64> =
            v["hash_ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        if !input.is_multiple_of(512) {
            ids.pop();
        }
        let hit = ids.iter().take_while(|&&id| store.is_ready(id, now)).count();
        let r = hit as u64 * 512;
        let secs = (input - r) as f64 / 20_000.0 + r as f64 / 1_000_000.0;
        let ready_at = now + SimDuration::from_us(500_000) + SimDuration::from_secs_f64_round(secs);
        read += r;
        for &id in &ids[..hit] {
            assert!(store.touch(id, now));
        }
        for &id in &ids[hit..] {
            let outcome = store.write(id, 512, now, ready_at, Ttl::FiveMin);
            redundant += u64::from(outcome == WriteOutcome::Redundant);
        }
    }
    let s = ReplaySettings::new(Format::Mooncake);
    let r = replay::replay(Path::new(&mooncake()), &s, std::slice::from_ref(&s.cache)).unwrap();
    let st = &r.choices[0].1;
    assert_eq!((st.account.cache_read, st.redundant_writes), (read, redundant));
    assert!(st.miss_tokens[EXPIRED] > 0 && st.miss_tokens[PENDING] > 0, "{:?}", st.miss_tokens);
}

#[test]
fn longer_ttl_never_hits_less_and_full_capacity_is_unbounded() {
    let mut s = ReplaySettings::new(Format::ClaudeCode);
    s.instant_ready = true;
    let base =
        replay::replay(Path::new(&claude_code()), &s, std::slice::from_ref(&s.cache)).unwrap();
    let curves = replay::curves(Path::new(&claude_code()), &s, base.distinct_tokens).unwrap();
    // With unbounded capacity and instant readiness a longer sliding TTL keeps a superset.
    for w in curves.ttl.windows(2) {
        assert!(w[1].1 >= w[0].1, "{:?}", curves.ttl);
    }
    // 5m point = the base run (5m); capacity = all distinct tokens never evicts.
    let five = curves.ttl.iter().find(|(t, _)| *t == Some(300_000_000)).unwrap().1;
    assert_eq!(five, base.choices[0].1.account.hit_rate());
    let full = curves.capacity.last().unwrap();
    assert_eq!((full.1, full.2), (1.0, base.choices[0].1.account.hit_rate()));
    assert!(curves.capacity[0].2 < full.2);
    // No TTL and room for every distinct block: the last point of the TTL ladder (none).
    assert_eq!(curves.capacity_no_ttl.last().unwrap().2, curves.ttl.last().unwrap().1);
}

/// The binary, its exit code, stdout and stderr.
fn prefixsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_prefixsim")).args(args).output().unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

#[test]
fn malformed_traces_exit_2_naming_the_line_and_print_nothing() {
    let good = r#"{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}"#;
    let cases = [
        (
            "badjson",
            format!("{good}\n{good}\n{{\"timestamp\": 5, \"input_len\n"),
            ":3:",
            "bad record",
        ),
        (
            "lengths",
            format!(
                "{good}\n{}\n",
                r#"{"timestamp": 1, "input_length": 1500, "output_length": 1, "hash_ids": [1, 2]}"#
            ),
            ":2:",
            "expected ceil(1500 / 512) = 3",
        ),
        (
            "unsorted",
            format!(
                "{}\n{good}\n",
                r#"{"timestamp": 9, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}"#
            ),
            ":2:",
            "earlier than the previous",
        ),
        (
            "missing",
            format!("{good}\n{}\n", r#"{"timestamp": 1, "input_length": 600, "hash_ids": [1, 2]}"#),
            ":2:",
            "missing field `output_length`",
        ),
    ];
    for (name, text, line, what) in cases {
        let p = tmp_dir(name).join("t.jsonl");
        std::fs::write(&p, &text).unwrap();
        let (code, stdout, stderr) =
            prefixsim(&["replay", p.to_str().unwrap(), "--format", "mooncake", "--json"]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stdout.is_empty(), "{name}: {stdout}");
        assert!(
            stderr.contains(&format!("t.jsonl{line}")) && stderr.contains(what),
            "{name}: {stderr}"
        );
        // --lenient skips the line with a warning and replays the rest.
        let (code, stdout, stderr) = prefixsim(&[
            "replay",
            p.to_str().unwrap(),
            "--format",
            "mooncake",
            "--json",
            "--lenient",
        ]);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(stderr.contains("skipped"), "{name}: {stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert!(v["requests"].as_u64().unwrap() >= 1);
    }
    let (code, stdout, stderr) =
        prefixsim(&["replay", &mooncake(), "--set", "cache.ttl=2 parsecs"]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(stderr.contains("cache.ttl must be a positive duration"), "{stderr}");
    // Any positive TTL replays under every-block; under anthropic only the API's two.
    let (code, _, stderr) = prefixsim(&["replay", &mooncake(), "--set", "cache.ttl=2m"]);
    assert_eq!(code, 0, "{stderr}");
    let requests = data("samples/requests.jsonl");
    let (code, stdout, stderr) = prefixsim(&["replay", &requests, "--set", "cache.ttl=2m"]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(stderr.contains("the Anthropic API offers 5m and 1h only"), "{stderr}");
    // A what-if choice may not reprice or retime (claude-code's default prices per request).
    let (code, stdout, stderr) =
        prefixsim(&["replay", &claude_code(), "--what-if", "model=claude-sonnet-4.5"]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(stderr.contains("only cache.* keys"), "{stderr}");
}

#[test]
fn malformed_claude_code_and_requests_traces_name_where() {
    let dir = tmp_dir("cc_bad");
    let text = r#"{"block_size": 64, "requests": [
        {"t": 0.0, "type": "n", "model": "m", "in": 128, "hash_ids": [1, 2]},
        {"t": 5.0, "type": "subagent", "duration_ms": 1000, "requests": [
          {"t": 0.0, "type": "n", "model": "m", "in": 200, "hash_ids": [7, 8]}]}]}"#;
    std::fs::write(dir.join("a.json"), text).unwrap();
    let (code, stdout, stderr) = prefixsim(&["replay", dir.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.contains("a.json: requests[1].requests[0]"), "{stderr}");
    assert!(stderr.contains("expected floor(200 / 64) = 3"), "{stderr}");
    let p = tmp_dir("req_bad").join("r.jsonl");
    let good = r#"{"timestamp_ms": 0, "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}"#;
    let bad = r#"{"timestamp_ms": 1, "body": {"model": "m"}}"#;
    std::fs::write(&p, format!("{good}\n{bad}\n")).unwrap();
    let (code, stdout, stderr) = prefixsim(&["replay", p.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.contains("r.jsonl:2:") && stderr.contains("messages"), "{stderr}");
}

#[test]
fn what_if_json_is_an_array_with_one_winner_and_out_writes_replay_json() {
    let out = tmp_dir("whatif_out");
    let (code, stdout, stderr) = prefixsim(&[
        "replay",
        &claude_code(),
        "--json",
        "--what-if",
        "--what-if",
        "cache.ttl=1h,cache.capacity_tokens=200000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let arr = v.as_array().unwrap();
    let labels: Vec<&str> = arr.iter().map(|o| o["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "cache.ttl=5m",
            "cache.ttl=1h",
            "cache.ttl=none",
            "cache.ttl=1h,cache.capacity_tokens=200000"
        ]
    );
    assert_eq!(arr.iter().filter(|o| o["wins_on_cost"] == true).count(), 1);
    for o in arr {
        let (read, input) =
            (o["cache_read"].as_f64().unwrap(), o["input_tokens"].as_f64().unwrap());
        assert!((o["hit_rate"].as_f64().unwrap() - read / input).abs() < 1e-6);
        assert_eq!(o["requests"], 752);
        assert!(o["cost_usd"].as_f64().unwrap() > 0.0);
        // Every written token became readable from exactly one source; the traces record
        // api_time for 702 requests and ttft for 14.
        let ready = &o["ready_from_tokens"];
        let sum: u64 = ["ttft", "api_time", "model", "instant"]
            .iter()
            .map(|k| ready[k].as_u64().unwrap())
            .sum();
        assert_eq!(Some(sum), o["cache_write"].as_u64());
        assert!(ready["ttft"].as_u64() > Some(0) && ready["api_time"].as_u64() > Some(0));
        assert_eq!(o["model"], "per-request");
    }
    // Capacity can only lose hits against the same TTL without it.
    assert!(arr[3]["cache_read"].as_u64() < arr[1]["cache_read"].as_u64());
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("replay.json")).unwrap()).unwrap();
    assert_eq!(file["kind"], "replay");
    assert_eq!(
        file["curves"]["hit_rate_vs_ttl"].as_array().unwrap().len(),
        replay::TTL_LADDER_US.len()
    );
    for curve in ["hit_rate_vs_capacity", "hit_rate_vs_capacity_no_ttl"] {
        let points = file["curves"][curve].as_array().unwrap();
        assert_eq!(points.len(), replay::CAPACITY_LADDER.len());
    }
    // The histogram decodes back to the reuse-gap count.
    let b64 = file["reuse_gap"]["hdr_v2_deflate_base64_us"].as_str().unwrap();
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
    let h: hdrhistogram::Histogram<u64> =
        hdrhistogram::serialization::Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
    assert_eq!(h.len(), file["reuse_gap"]["count"].as_u64().unwrap());
    assert!(!out.join("replay.json.tmp").exists());
}

#[test]
fn same_trace_same_bytes() {
    let a = prefixsim(&["replay", &mooncake(), "--json", "--what-if"]);
    let b = prefixsim(&["replay", &mooncake(), "--json", "--what-if"]);
    assert_eq!(a.0, 0);
    assert_eq!(a.1, b.1);
    // Mooncake records no timing: every entry's readiness is the model's.
    let v: serde_json::Value = serde_json::from_str(&a.1).unwrap();
    for o in v.as_array().unwrap() {
        assert_eq!(o["ready_from_tokens"]["model"], o["cache_write"]);
    }
}

/// `requests` format: two identical bodies whose system prompt carries the breakpoint. The
/// second, 60 s later, reads exactly what the first wrote; 400 s later (TTL 5m) the entry has
/// expired and the whole write is charged to expiry; with TTL 1h it hits again.
#[test]
fn requests_format_replays_real_breakpoints() {
    let system = "Follow the repository's style guide. ".repeat(200); // ~1,800 tokens
    let body = serde_json::json!({
        "model": "claude-sonnet-4-5", "max_tokens": 100,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hello"}],
    });
    let write = |name: &str, gap_ms: u64| {
        let p = tmp_dir(name).join("req.jsonl");
        let l1 = serde_json::json!({"timestamp_ms": 0, "body": body, "output_tokens": 10});
        let l2 = serde_json::json!({"timestamp_ms": gap_ms, "body": body, "output_tokens": 10});
        std::fs::write(&p, format!("{l1}\n{l2}\n")).unwrap();
        p
    };
    let s = ReplaySettings::new(Format::Requests);
    let near = run_one(&write("req_near", 60_000), &s);
    let w = near.account.cache_write_5m;
    assert!(w > 1024, "the system prompt is above the minimum: {w}");
    assert_eq!(near.account.cache_read, w);
    assert_eq!(near.requests_with_hit, 1);
    let far = write("req_far", 400_000);
    let st = run_one(&far, &s);
    assert_eq!((st.account.cache_read, st.miss_tokens[EXPIRED], st.miss_tokens[NEVER]), (0, w, w));
    let mut one_hour = s.clone();
    one_hour.apply_set("cache.ttl=1h").unwrap();
    let st = run_one(&far, &one_hour);
    assert_eq!((st.account.cache_read, st.account.cache_write_1h), (w, w));
}

/// The bundled `requests` sample (`data/samples/requests.jsonl`): each fork carries the parent's
/// tools, system prompt and 9-message history, then two new messages (the launch and its task),
/// with breakpoints at the system prompt and the last block. Its last-block lookback steps back
/// two positions to the end of the history, where the parent's request at 24.9 s wrote an entry,
/// ready at 24.9 s + TTFT (at most 0.5 s + 17k / 9,100 tok/s, under 3 s): before 33 s. So each
/// fork reads exactly that request's prompt, writes the two new messages and sends nothing
/// uncached.
#[test]
fn bundled_requests_sample_forks_read_the_parents_cache() {
    let sample = data("samples/requests.jsonl");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&sample)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tokens = |i: usize| {
        let (prompt, _) = prefixsim::replay::body::request_from_json(&lines[i]["body"]).unwrap();
        prompt.tokens()
    };
    let conv = |i: usize| lines[i]["conversation"].as_str().unwrap().to_string();
    assert_eq!(
        (lines.len(), conv(4), lines[4]["timestamp_ms"].as_u64()),
        (8, "main".into(), Some(24_900))
    );
    let parent = tokens(4);
    assert!(parent > 4_096, "the prefix is above every model's minimum: {parent}");
    let (code, stdout, stderr) = prefixsim(&["replay", &sample, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = v["conversations"].as_array().unwrap();
    for (i, fork) in [(5, "main/fork-1"), (6, "main/fork-2")] {
        assert_eq!(conv(i), fork);
        let row = rows.iter().find(|r| r["name"] == fork).unwrap();
        assert_eq!(row["input_tokens"].as_u64(), Some(tokens(i)), "{fork}");
        assert_eq!(row["cache_read"].as_u64(), Some(parent), "{fork}");
    }
}

/// Every data set under `data/` ships with its NOTICE.md and the Apache-2.0 LICENSE, and
/// data/README.md indexes it.
#[test]
fn every_bundled_data_set_has_its_notice_licence_and_index_entry() {
    let index = std::fs::read_to_string(data("README.md")).unwrap();
    for set in ["mooncake", "claude-code-traces", "claude-code-ttft"] {
        let notice = std::fs::read_to_string(data(&format!("{set}/NOTICE.md"))).unwrap();
        assert!(notice.contains("Apache License 2.0"), "{set}/NOTICE.md names the licence");
        let licence = std::fs::read_to_string(data(&format!("{set}/LICENSE"))).unwrap();
        assert!(licence.trim_start().starts_with("Apache License"), "{set}/LICENSE");
        assert!(licence.contains("Version 2.0, January 2004"), "{set}/LICENSE");
        assert!(index.contains(&format!("`{set}/")), "data/README.md indexes {set}");
    }
}

/// Every `data/...` path in the `--help` examples exists, so the examples run in a clone.
#[test]
fn help_examples_name_bundled_data_that_exists() {
    for args in [&["--help"][..], &["replay", "--help"][..]] {
        let (code, stdout, _) = prefixsim(args);
        assert_eq!(code, 0);
        let paths: Vec<&str> =
            stdout.split_whitespace().filter(|w| w.starts_with("data/")).collect();
        assert!(!paths.is_empty(), "{args:?} shows a bundled data example");
        for p in paths {
            assert!(Path::new(&data(&p["data/".len()..])).exists(), "{args:?}: {p}");
        }
    }
}

/// `requests` replay keeps object keys in the order sent: request 2 repeats request 1 with its
/// tool_use input's keys swapped. Breakpoints on the system prompt, on messages[0] and (the
/// top-level automatic one) on the last message. Request 1 writes all three; request 2's last
/// breakpoint and messages[1] differ, the lookback finds messages[0]'s entry: it reads
/// tokens(system + messages[0]) and writes messages[1..]. With the keys in the same order it
/// reads everything (control). Lines are written as text: a `serde_json::Value` would sort them.
#[test]
fn requests_replay_does_not_sort_object_keys() {
    let system = "Follow the repository's style guide. ".repeat(200);
    let line = |t: u64, input: &str| {
        format!(
            r#"{{"timestamp_ms": {t}, "output_tokens": 5, "body": {{"model": "claude-sonnet-4-5",
            "cache_control": {{"type": "ephemeral"}},
            "system": [{{"type": "text", "text": "{system}", "cache_control": {{"type": "ephemeral"}}}}],
            "messages": [
              {{"role": "user", "content": [{{"type": "text", "text": "read it", "cache_control": {{"type": "ephemeral"}}}}]}},
              {{"role": "assistant", "content": [{{"type": "tool_use", "id": "t1", "name": "Read", "input": {input}}}]}},
              {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}}]}}]}}}}"#
        )
        .replace('\n', " ")
    };
    let (ab, ba) = (r#"{"path": "a.rs", "limit": 10}"#, r#"{"limit": 10, "path": "a.rs"}"#);
    let write = |name: &str, second: &str| {
        let p = tmp_dir(name).join("req.jsonl");
        // 10 s apart: past any model's time to first token, so request 1's entries are ready.
        std::fs::write(&p, format!("{}\n{}\n", line(0, ab), line(10_000, second))).unwrap();
        p
    };
    let s = ReplaySettings::new(Format::Requests);
    let same = run_one(&write("req_keys_same", ab), &s);
    let swapped = run_one(&write("req_keys_swapped", ba), &s);
    let body = |input: &str| {
        let v: serde_json::Value = serde_json::from_str(&line(0, input)).unwrap();
        let b = prefixsim::replay::body::parse_body(v.get("body").unwrap()).unwrap();
        b.prompt("default")
    };
    let p = body(ab);
    let (first, all) = (p.prefix_tokens(1), p.tokens());
    // Request 1 reads nothing; request 2 reads all (same order) or system + messages[0].
    assert_eq!(same.account.cache_read, all);
    assert_eq!(swapped.account.cache_read, first);
    assert_eq!(swapped.account.cache_write_5m, all + (all - first));
    assert_eq!(p.common_prefix_len(&body(ba)), 2);
}
