//! Tests: `prefixsim replay` through the binary (malformed traces exit 2 naming the line,
//! `--what-if` JSON and `replay.json`, same bytes for the same trace), the `requests` format, and
//! the bundled data sets.

use super::*;

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
    let s = ReplaySettings::new(TraceFormat::Requests);
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
    let s = ReplaySettings::new(TraceFormat::Requests);
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
    let q = body(ba);
    assert_eq!(
        (p.prefix_key(1) == q.prefix_key(1), p.prefix_key(2) == q.prefix_key(2)),
        (true, false)
    );
}
