//! Tests: trace replay (`prefixsim replay`). Hand-made tiny traces with answers derived by hand
//! (in the comments) and the bundled traces against independent computations written here;
//! the binary, malformed traces and the bundled data sets in `cli`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use prefixsim::replay::{self, ChoiceStats, ReplaySettings, TraceFormat};
use prefixsim::time::{SimDuration, SimTime};

mod cli;

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
    let mut s = ReplaySettings::new(TraceFormat::Mooncake);
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
    let model = prefixsim::config::preset("claude-sonnet-4.5").unwrap();
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
    let mut s = ReplaySettings::new(TraceFormat::ClaudeCode);
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
    let s = ReplaySettings::new(TraceFormat::ClaudeCode);
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
    let mut s = ReplaySettings::new(TraceFormat::ClaudeCode);
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
    let mut s = ReplaySettings::new(TraceFormat::ClaudeCode);
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
    let mut s = ReplaySettings::new(TraceFormat::ClaudeCode);
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

fn unbounded(format: TraceFormat) -> ReplaySettings {
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
        &unbounded(TraceFormat::Mooncake),
        &[unbounded(TraceFormat::Mooncake).cache],
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
    let s = unbounded(TraceFormat::ClaudeCode);
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
        let hit = ids
            .iter()
            .take_while(|&&id| store.probe(id, now) == prefixsim::cache::State::Ready)
            .count();
        let r = hit as u64 * 512;
        let secs = (input - r) as f64 / 20_000.0 + r as f64 / 1_000_000.0;
        let ready_at =
            now + SimDuration::from_us(500_000) + SimDuration::from_us((secs * 1e6).round() as u64);
        read += r;
        for &id in &ids[..hit] {
            assert!(store.touch(id, now));
        }
        for &id in &ids[hit..] {
            let outcome = store.write(id, 512, now, ready_at, Ttl::FiveMin);
            redundant += u64::from(outcome == WriteOutcome::Redundant);
        }
    }
    let s = ReplaySettings::new(TraceFormat::Mooncake);
    let r = replay::replay(Path::new(&mooncake()), &s, std::slice::from_ref(&s.cache)).unwrap();
    let st = &r.choices[0].1;
    assert_eq!((st.account.cache_read, st.redundant_writes), (read, redundant));
    assert!(st.miss_tokens[EXPIRED] > 0 && st.miss_tokens[PENDING] > 0, "{:?}", st.miss_tokens);
}

#[test]
fn longer_ttl_never_hits_less_and_full_capacity_is_unbounded() {
    let mut s = ReplaySettings::new(TraceFormat::ClaudeCode);
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
