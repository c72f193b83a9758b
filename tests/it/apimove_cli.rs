//! The commands whose work lives in the library (`replay`, `calibrate`, `models`) still print
//! as they did: the warnings on stderr (at most 20 skipped lines, then the one that says no
//! block repeats), `calibrate --ttl`'s refusal, the command line in latency.toml's header, and
//! `models --json` ending in one newline.

use std::path::Path;

use super::common::{bin, scratch};

/// The binary run in the crate's root: exit code, stdout, stderr.
fn prefixsim(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

#[test]
fn replay_prints_twenty_skipped_lines_then_that_nothing_repeats() {
    let dir = scratch("apimove", "warnings");
    let good = |t: u64, id: u64| {
        format!("{{\"timestamp\": {t}, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [{id}]}}\n")
    };
    let trace = dir.join("t.jsonl");
    let text = good(0, 1) + &"{\"timestamp\": 1}\n".repeat(25) + &good(5, 2);
    std::fs::write(&trace, text).unwrap();
    let t = trace.to_str().unwrap();
    let (code, stdout, stderr) = prefixsim(&["replay", t, "--lenient", "--set", "block_size=4"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 21, "{stderr}");
    assert!(lines[..20].iter().all(|l| l.starts_with("warning: ") && l.ends_with("(skipped)")));
    assert!(lines[0].contains("t.jsonl:2:"), "{}", lines[0]);
    assert!(lines[20].starts_with("warning: no prefix block appears twice"), "{}", lines[20]);
    assert!(stdout.contains("25 line(s) skipped"), "{stdout}");
}

#[test]
fn calibrate_refuses_a_zero_ttl_and_writes_the_command_into_latency_toml() {
    let log = "data/samples/usage-log.jsonl";
    let (code, stdout, stderr) = prefixsim(&["calibrate", log, "--ttl", "0"]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.contains("a TTL must be positive (or `none`)"), "{stderr}");
    let out = scratch("apimove", "calibrate").join("calib");
    let o = out.to_str().unwrap();
    let (code, stdout, stderr) = prefixsim(&["calibrate", log, "--ttl", "1h", "--out", o]);
    assert_eq!(code, 0, "{stderr}");
    let toml = std::fs::read_to_string(Path::new(o).join("latency.toml")).unwrap();
    let command = format!("prefixsim calibrate {log} --ttl 1h --out {o}");
    assert!(toml.contains(&command), "{toml}");
    assert!(stdout.starts_with(&format!("Latency per model from {log} (usage-log)")), "{stdout}");
}

#[test]
fn models_json_ends_in_one_newline_and_a_bad_file_exits_2() {
    let (code, stdout, _) = prefixsim(&["models", "--json"]);
    assert_eq!(code, 0);
    assert!(stdout.ends_with("]\n}\n") && !stdout.ends_with("\n\n"), "{stdout}");
    let (code, stdout, stderr) = prefixsim(&["models", "--models", "no/such/models.toml"]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.starts_with("error: ") && stderr.contains("no/such/models.toml"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
