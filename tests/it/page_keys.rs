//! The page sets what the file sets: every key of the experiment schema (`serve::schema`, the
//! serde walk of `ExperimentFile`) is accepted by the API at a value `--set` accepts and refused
//! with `--set`'s own message at a value it refuses; the question and the export follow the
//! shared prefix; the metric names docs/serve.md gives are the ones the API accepts.

use std::path::{Path, PathBuf};

use prefixsim::serve::schema;
use prefixsim::Experiment;
use serde_json::Value;

use super::common::{bin, scratch};
use super::serve::{Browser, Server};

fn default_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/default.toml")
}

/// `text` percent-encoded for a query string.
fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// Values tried for a key that the file does not write (its default applies), in order: the
/// first `--set` accepts is the key's valid value.
const VALID: [&str; 23] = [
    "1",
    "0.5",
    "true",
    "5s",
    "1h",
    "uniform(1, 2)",
    "const(1s)",
    "const(100)",
    "[\"text\"]",
    "{}",
    "x",
    "prefix-aware",
    "implicit",
    "classic",
    "shared",
    "kept",
    "hold_cap",
    "1000000",
    "24h",
    "eager",
    "[\"workload.agents\"]",
    "processor-sharing",
    "llama-3.1-8b",
];

/// The settings a key needs beside it to mean something (a second model's latency needs a
/// kind that uses one, a provider's key its policy, the report's keys its answer), tried in
/// order after none.
const CONTEXTS: [&[&str]; 6] = [
    &[],
    &["workload.kind=fork_other_model(model=claude-sonnet-4.5)"],
    &["model=claude-sonnet-4.5"],
    &["model=gpt-5.4", "cache.policy=openai"],
    &["cache.policy=vllm"],
    &["report.answer=cost"],
];

/// Values tried for a refusal: the first `--set` refuses is the key's invalid value.
const INVALID: [&str; 4] = ["many", "-1", "[[1]]", "{x = 1}"];

/// Whether `--set` of `context` and `assignment` on `file` resolves (the library's `--set`:
/// `set_all`).
fn accepted(file: &Path, context: &[&str], assignment: &str) -> bool {
    let exp = Experiment::from_file(file).expect("the file resolves");
    let sets: Vec<String> = context.iter().map(|s| s.to_string()).collect();
    exp.set_all(&[sets, vec![assignment.to_string()]].concat()).is_ok()
}

/// `prefixsim run FILE --set ASSIGNMENT`'s error line, without its `error: ` lead.
fn cli_error(file: &Path, assignment: &str) -> String {
    let o = bin().arg("run").arg(file).args(["--set", assignment]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{assignment}: {}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8(o.stderr).unwrap();
    err.trim_end().strip_prefix("error: ").unwrap_or_else(|| panic!("{err}")).to_string()
}

#[test]
fn every_key_of_the_schema_is_set_as_set_sets_it() {
    let file = default_file();
    let server = Server::start(&[file.to_str().unwrap()]);
    let controls = server.get("/api/controls").json();
    let start = |key: &str| {
        let keys = controls["keys"].as_array().unwrap();
        keys.iter().find(|k| k["key"] == key).and_then(|k| k["value"].as_str().map(String::from))
    };
    let (mut unreachable, mut checked) = (Vec::new(), 0);
    for key in schema::keys() {
        let with = |context: &[&str], value: &str| {
            let mut q: Vec<String> = context
                .iter()
                .map(|a| a.split_once('=').map(|(k, v)| format!("{k}={}", enc(v))).unwrap())
                .collect();
            q.push(format!("{}={}", enc(key), enc(value)));
            server.get(&format!("/api/export?{}", q.join("&")))
        };
        let export = |value: &str| with(&[], value);
        if let Some(why) = schema::refusal(key) {
            let r = export("x");
            assert_eq!(
                (r.status, r.body.trim()),
                (400, &*format!("`{key}` cannot be set from the page: {why}"))
            );
            assert!(start(key).is_none(), "{key} has no control");
            continue;
        }
        assert!(
            controls["keys"].as_array().unwrap().iter().any(|k| k["key"] == *key),
            "{key}: no control"
        );
        let candidates: Vec<String> =
            start(key).into_iter().chain(VALID.map(String::from)).collect();
        let found = CONTEXTS.iter().find_map(|c| {
            let v = candidates.iter().find(|v| accepted(&file, c, &format!("{key}={v}")))?;
            Some((c, v))
        });
        match found {
            Some((context, v)) => {
                let r = with(context, v);
                assert_eq!(r.status, 200, "{context:?} {key}={v} is accepted by --set: {}", r.body);
                checked += 1;
            }
            None => unreachable.push(key.clone()),
        }
        if let Some(bad) = INVALID.iter().find(|v| !accepted(&file, &[], &format!("{key}={v}"))) {
            let r = export(bad);
            assert_eq!(r.status, 400, "{key}={bad}: {}", r.body);
            assert_eq!(r.body.lines().count(), 1, "one line: {}", r.body);
            assert_eq!(r.body.trim_end(), cli_error(&file, &format!("{key}={bad}")), "{key}={bad}");
        }
    }
    assert!(checked > 100, "{checked} keys set");
    assert!(unreachable.is_empty(), "no value --set accepts found for {unreachable:?}");
}

#[test]
fn the_question_and_the_export_follow_the_shared_prefix() {
    let file = default_file();
    let server = Server::start(&[file.to_str().unwrap()]);
    let controls = server.get("/api/controls").json();
    assert_eq!(controls["prefix"]["tokens"], 11_500, "tools + system prompt and the brief");
    assert!(controls["question"].as_str().unwrap().contains("a shared 11.5k-token prefix"));
    let export = server.get("/api/export?prefix_tokens=80000");
    assert_eq!(export.status, 200, "{}", export.body);
    let toml: toml::Table = export.body.parse().unwrap();
    let question = toml["question"].as_str().unwrap();
    assert!(question.contains("a shared 80k-token prefix"), "{question}");
    assert!(!export.body.contains("11.5k"), "{}", export.body);
    assert_eq!(toml["workload"]["subagent_tokens"].as_integer(), Some(77_000));
    assert_eq!(toml["workload"]["brief_tokens"].as_integer(), Some(3_000));
    // Any other key set is carried too, and the agents the question counts follow.
    let q = "prefix_tokens=80000&workload.agents=5&replications=2&strategies=%5B%22eager%22%5D";
    let run = server.get(&format!("/api/run?{q}"));
    assert_eq!(run.status, 200, "{}", run.body);
    let run = run.json();
    let asked = run["question"].as_str().unwrap();
    assert!(asked.starts_with("Claude Code launches 5 Explore sub-agents"), "{asked}");
    assert_eq!(run["summary"]["question"], asked);
    assert_eq!(run["prefix_tokens"], 80_000);
    let exported = scratch("page_keys", "question").join("exported.toml");
    std::fs::write(&exported, server.get(&format!("/api/export?{q}")).body).unwrap();
    let o = bin().arg("run").arg(&exported).arg("--json").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cli: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(cli, run["summary"], "the export runs to the page's numbers and question");
    let small = server.get("/api/export?prefix_tokens=2000");
    assert_eq!(small.status, 400);
    assert!(small.body.starts_with("prefix_tokens = 2000: "), "{}", small.body);
}

/// The table of docs/serve.md's "Sweep metrics" section: (name, title) per row.
fn documented_metrics() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/serve.md"))
        .unwrap();
    let section = doc.split("### Sweep metrics").nth(1).expect("docs/serve.md has the section");
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect()
}

#[test]
fn the_documented_metrics_are_the_accepted_ones() {
    let server = Server::start(&[default_file().to_str().unwrap()]);
    let listed = server.get("/api/metrics").json();
    let accepted: Vec<(String, String)> = listed["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap().into(), m["title"].as_str().unwrap().into()))
        .collect();
    assert_eq!(documented_metrics(), accepted, "docs/serve.md and /api/metrics");
    for (name, _) in &accepted {
        let path =
            format!("/api/sweep?replications=2&sweep_key=seed&sweep_values=1&sweep_metric={name}");
        let r = server.get(&path);
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert!(r.body.contains("event: done"), "{name}: {}", r.body);
    }
    let r = server.get("/api/sweep?sweep_key=seed&sweep_values=1&sweep_metric=cost");
    let names: Vec<&str> = accepted.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(
        (r.status, r.body.trim()),
        (400, &*format!("sweep_metric = `cost`: use one of {}", names.join(", ")))
    );
}

#[test]
fn thousands_of_keys_huge_values_and_files_are_refused_in_one_line() {
    let server = Server::start(&[default_file().to_str().unwrap()]);
    let many: Vec<String> = (0..2000).map(|i| format!("seed={i}")).collect();
    let cases = [
        (many.join("&"), 414, "bytes; at most"),
        (many[..300].join("&"), 400, "300 settings; at most 256 are accepted"),
        (format!("name={}", "x".repeat(20_000)), 414, "bytes; at most"),
        ("latency%20.%20from=%2Fetc%2Fpasswd".into(), 400, "unknown setting `latency . from`"),
        ("models_file=%2Fetc%2Fpasswd".into(), 400, "`models_file` cannot be set"),
        ("workload.turns=empirical(file%3D%2Fetc%2Fpasswd)".into(), 400, "the page reads no file"),
        ("workload.turns=EMPIRICAL%20(%2Fetc%2Fpasswd)".into(), 400, "the page reads no file"),
        ("prefix_tokens=lots".into(), 400, "prefix_tokens = `lots`"),
    ];
    for (query, status, says) in cases {
        let r = server.get(&format!("/api/run?{query}"));
        let shown = &query[..query.len().min(60)];
        assert_eq!(r.status, status, "{shown}: {}", r.body);
        assert!(r.body.contains(says), "{shown}: {}", r.body);
        assert_eq!(r.body.lines().count(), 1, "{shown}: one line");
        assert!(r.body.len() < 400, "{shown}: a short message");
    }
    // A list given as values reads no file.
    let r = server.get("/api/export?workload.turns=empirical(%5B2%2C%203%5D)");
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn an_escaped_empirical_file_is_refused() {
    let server = Server::start(&[default_file().to_str().unwrap()]);
    let value = enc(r#""\u0065mpirical(file=/etc/passwd)""#);
    let r = server.get(&format!("/api/export?workload.turns={value}"));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("the page reads no file"), "{}", r.body);
}

// ---------------------------------------------------------------- in the browser

/// A key without a control of its own above, set in its section: the run follows it; a value
/// `--set` refuses shows `--set`'s message beside the control, its section opened.
pub(super) fn every_key_has_a_control_and_a_refusal_shows_beside_it(b: &Browser) {
    let set = |key: &str, value: &str| {
        b.script(&format!(
            "const i = document.querySelector('#all-keys [data-key=\"{key}\"]');
             i.value = '{value}'; i.dispatchEvent(new Event('change', {{bubbles: true}}));
             return true"
        ))
    };
    let count = b.script("return document.querySelectorAll('#all-keys [data-key]').length");
    assert!(count.as_u64().unwrap() > 100, "a control per key: {count}");
    set("workload.turns", "const(3)");
    b.wait_for(
        "return document.getElementById('status').dataset.state === 'ready' && \
         document.getElementById('results').dataset.query.includes('workload.turns=const%283%29')",
        "the run with a key set in its section",
    );
    set("rate_limits.rpm", "many");
    b.wait_for("return document.getElementById('status').dataset.state === 'error'", "a refusal");
    let shown = b.script(
        "const e = document.querySelector('[data-error-for=\"rate_limits.rpm\"]');
         return [e.textContent, e.closest('details').open]",
    );
    let says = "--set rate_limits.rpm=many: ";
    assert!(shown[0].as_str().unwrap().starts_with(says), "beside the control: {shown}");
    assert_eq!(shown[1], true, "its section is opened");
}
