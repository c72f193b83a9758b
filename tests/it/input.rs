//! Reading inputs: gzip transparently, and a bound on line length so that a file with no
//! newline (`/dev/zero`) is refused with a message instead of exhausting memory.

use std::io::Write;
use std::path::PathBuf;

use super::common::bin;

fn scratch(name: &str) -> PathBuf {
    super::common::scratch("input", name)
}

#[test]
fn a_trace_without_newlines_is_refused_with_the_line_named() {
    // A sparse file of zeros: a regular file with no line break in its 65 MiB.
    let path = scratch("no-newline").join("zeros.jsonl");
    std::fs::File::create(&path).unwrap().set_len(65 << 20).unwrap();
    for format in ["mooncake", "requests"] {
        let out = bin().args(["replay", "--format", format]).arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{format}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("zeros.jsonl:1: line longer than 64 MiB"), "{format}: {err}");
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

#[test]
fn gzipped_traces_replay_as_their_plain_copies() {
    let dir = scratch("gzip");
    // Two Mooncake records sharing their first 512-token block; the second re-reads it.
    let mooncake = "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 10, \
                    \"hash_ids\": [1, 2]}\n{\"timestamp\": 60000, \"input_length\": 1024, \
                    \"output_length\": 10, \"hash_ids\": [1, 3]}\n";
    std::fs::write(dir.join("t.jsonl"), mooncake).unwrap();
    std::fs::write(dir.join("t.jsonl.gz"), gzip(mooncake.as_bytes())).unwrap();
    // A conversation file with a measured ttft, plain and gzipped, in one directory each.
    let conv = r#"{"id": "c", "block_size": 64, "requests": [
        {"t": 0, "type": "s", "model": "claude-sonnet-4-5-20250929", "in": 5000, "out": 50,
         "hash_ids": [], "ttft": 1.5, "api_time": 3.0}]}"#;
    let conv = conv.replace(
        "\"hash_ids\": []",
        &format!("\"hash_ids\": {:?}", (1..=78).collect::<Vec<u64>>()),
    );
    for (sub, name, bytes) in
        [("plain", "c.json", conv.as_bytes().to_vec()), ("gz", "c.json.gz", gzip(conv.as_bytes()))]
    {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join(name), bytes).unwrap();
    }
    let run = |format: &str, path: PathBuf| {
        let out = bin().args(["replay", "--format", format, "--json"]).arg(&path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        // The trace's own name differs (t vs t.jsonl.gz); compare the numbers.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        (v["requests"].clone(), v["choices"].clone())
    };
    assert_eq!(run("mooncake", dir.join("t.jsonl")), run("mooncake", dir.join("t.jsonl.gz")));
    assert_eq!(run("claude-code", dir.join("plain")), run("claude-code", dir.join("gz")));
}
