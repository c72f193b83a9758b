//! Tests: `prefixsim check` (an experiment validated as `run` or `sweep` would before
//! starting, nothing run or written) and the experiment file's JSON Schema: the shipped
//! schema/experiment.schema.json is what the binary generates, every file in experiments/ and
//! every TOML example of docs/ validates against it, and a file with an unknown key or a value
//! of the wrong type does not.
//!
//! The validator is a small one below, for the keywords the generated schema uses (`type`,
//! `properties`, `additionalProperties`, `enum`, `minimum`, `maximum`, `items`, `minItems`,
//! `uniqueItems`, `$ref`): the `jsonschema` crate would pull in about forty crates (regex
//! engines, URL and e-mail parsers, an HTTP resolver) for what these tests need.

use std::path::Path;

use serde_json::Value;

use super::common::{bin, scratch};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn schema() -> Value {
    let text = std::fs::read_to_string(repo().join("schema/experiment.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_shipped_schema_is_what_the_binary_prints() {
    let o = bin().arg("schema").output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let shipped = std::fs::read_to_string(repo().join("schema/experiment.schema.json")).unwrap();
    assert!(
        String::from_utf8(o.stdout).unwrap() == shipped,
        "schema/experiment.schema.json is stale: `prefixsim schema > schema/experiment.schema.json`"
    );
}

#[test]
fn every_experiment_and_every_toml_example_of_the_docs_validates() {
    let schema = schema();
    let mut checked = 0;
    let mut files: Vec<_> = std::fs::read_dir(repo().join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let errors = validate_toml(&schema, &text);
        assert!(errors.is_empty(), "{}: {errors:?}", f.display());
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} experiment files");
    let mut examples = 0;
    for (page, line, block) in doc_toml_blocks() {
        let Ok(table) = block.parse::<toml::Table>() else { continue };
        if !is_experiment(&table) {
            continue;
        }
        let errors = validate(&schema, &schema, &serde_json::to_value(&table).unwrap(), "");
        assert!(errors.is_empty(), "{page}:{line}: {errors:?}\n{block}");
        examples += 1;
    }
    assert!(examples >= 3, "only {examples} TOML examples in docs/");
}

#[test]
fn an_unknown_key_or_a_wrong_type_fails_validation() {
    let schema = schema();
    let cases = [
        ("[workload]\nagnets = 3\n", "/workload: unknown key `agnets`"),
        ("max_wait = \"3s\"\n", ": unknown key `max_wait`"),
        ("[workload]\nagents = \"three\"\n", "/workload/agents: expected integer"),
        ("[workload]\nagents = 0\n", "/workload/agents: below the minimum 1"),
        ("[cache]\nmiss_probability = 1.5\n", "/cache/miss_probability: above the maximum 1"),
        ("[cache]\npolicy = \"lru\"\n", "/cache/policy: not one of"),
        ("[workload]\nparent_idle = 5\n", "/workload/parent_idle: expected string"),
        ("strategies = []\n", "/strategies: fewer than 1 items"),
    ];
    for (text, want) in cases {
        let errors = validate_toml(&schema, text);
        assert!(errors.iter().any(|e| e.contains(want)), "{text}: {errors:?}, want {want}");
    }
    // And `prefixsim` refuses each of them too (the schema is no looser than the reader).
    let d = scratch("check_schema", "wrong");
    for (i, (text, _)) in cases.iter().enumerate() {
        let f = d.join(format!("{i}.toml"));
        std::fs::write(&f, text).unwrap();
        let o = bin().arg("check").arg(&f).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{text}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn check_says_what_would_run_and_refuses_what_run_refuses() {
    let o = bin().args(["check", "experiments/default.toml"]).current_dir(repo()).output();
    let o = o.unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.starts_with("ok: experiments/default.toml is valid; `prefixsim run`"), "{text}");
    assert!(text.contains("simulated requests"), "{text}");
    let hold = ["check", "experiments/hold_vs_prefix_size.toml"];
    let o = bin().args(hold).current_dir(repo()).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("`prefixsim sweep`") && text.contains("points of [sweep]"), "{text}");
    // What run refuses before it starts, check refuses with the same line and exit code.
    let args = ["experiments/default.toml", "--set", "limits.max_requests=10"];
    let run = bin().arg("run").args(args).current_dir(repo()).output().unwrap();
    let check = bin().arg("check").args(args).current_dir(repo()).output().unwrap();
    assert_eq!((run.status.code(), check.status.code()), (Some(2), Some(2)));
    assert_eq!(run.stderr, check.stderr);
    assert!(check.stdout.is_empty());
    // A point of a sweep that does not resolve is found without running any.
    let d = scratch("check_schema", "combo");
    let f = d.join("combo.toml");
    std::fs::write(&f, super::common::REFUSED_TOGETHER).unwrap();
    let o = bin().arg("check").arg(&f).current_dir(&d).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("point 3") && e.lines().count() == 1, "{e}");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "check wrote a file");
}

/// A TOML text's validation errors (a parse error is one).
fn validate_toml(schema: &Value, text: &str) -> Vec<String> {
    match text.parse::<toml::Table>() {
        Ok(t) => validate(schema, schema, &serde_json::to_value(&t).unwrap(), ""),
        Err(e) => vec![format!("not TOML: {e}")],
    }
}

/// True when a TOML example of the docs is (part of) an experiment file: not a calibration
/// file's, a models file's or a replay's keys alone.
fn is_experiment(t: &toml::Table) -> bool {
    let keys = schema()["properties"].as_object().unwrap().clone();
    !t.is_empty() && t.keys().all(|k| keys.contains_key(k))
}

/// Every ```` ```toml ```` block of docs/*.md: (page, line of the fence, text).
fn doc_toml_blocks() -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut pages: Vec<_> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    for p in pages {
        let text = std::fs::read_to_string(&p).unwrap();
        let mut block: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            match (&mut block, line.trim_end()) {
                (None, "```toml") => block = Some((i + 1, String::new())),
                (Some((at, b)), "```") => {
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    out.push((name, *at, std::mem::take(b)));
                    block = None;
                }
                (Some((_, b)), _) => b.push_str(&format!("{line}\n")),
                _ => {}
            }
        }
    }
    out
}

/// The errors of `v` (at JSON pointer `at`) against `s`, a schema or sub-schema of `root`.
fn validate(root: &Value, s: &Value, v: &Value, at: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(s) = s.as_object() else { return errors };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = root.pointer(r.trim_start_matches('#')).expect("a $ref resolves");
        errors.extend(validate(root, target, v, at));
    }
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            t => vec![t.as_str().unwrap()],
        };
        if !types.iter().any(|t| is_type(v, t)) {
            errors.push(format!("{at}: expected {}, found {v}", types.join(" or ")));
            return errors;
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{at}: not one of {e:?}: {v}"));
        }
    }
    if let (Some(min), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < min {
            errors.push(format!("{at}: below the minimum {min}: {x}"));
        }
    }
    if let (Some(max), Some(x)) = (s.get("maximum").and_then(Value::as_f64), v.as_f64()) {
        if x > max {
            errors.push(format!("{at}: above the maximum {max}: {x}"));
        }
    }
    if let Some(items) = v.as_array() {
        errors.extend(validate_array(root, s, items, at));
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for (k, x) in obj {
            let path = format!("{at}/{k}");
            match (props.and_then(|p| p.get(k)), s.get("additionalProperties")) {
                (Some(sub), _) => errors.extend(validate(root, sub, x, &path)),
                (None, Some(Value::Bool(false))) => {
                    errors.push(format!("{at}: unknown key `{k}`"));
                }
                (None, Some(sub)) => errors.extend(validate(root, sub, x, &path)),
                (None, None) => {}
            }
        }
    }
    errors
}

fn validate_array(
    root: &Value,
    s: &serde_json::Map<String, Value>,
    items: &[Value],
    at: &str,
) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
        if (items.len() as u64) < min {
            errors.push(format!("{at}: fewer than {min} items"));
        }
    }
    if s.get("uniqueItems") == Some(&Value::Bool(true)) {
        for (i, x) in items.iter().enumerate() {
            if items[..i].contains(x) {
                errors.push(format!("{at}/{i}: listed twice: {x}"));
            }
        }
    }
    if let Some(sub) = s.get("items") {
        for (i, x) in items.iter().enumerate() {
            errors.extend(validate(root, sub, x, &format!("{at}/{i}")));
        }
    }
    errors
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "null" => v.is_null(),
        _ => panic!("a type the validator does not know: {t}"),
    }
}

#[test]
fn the_validator_knows_every_keyword_the_schema_uses() {
    let known = [
        "$schema",
        "$defs",
        "$ref",
        "title",
        "description",
        "type",
        "properties",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "items",
        "minItems",
        "uniqueItems",
        "writeOnly",
    ];
    fn walk(v: &Value, known: &[&str], in_properties: bool) {
        if let Some(o) = v.as_object() {
            for (k, x) in o {
                assert!(in_properties || known.contains(&k.as_str()), "unknown keyword {k}");
                walk(x, known, !in_properties && (k == "properties" || k == "$defs"));
            }
        }
    }
    walk(&schema(), &known, false);
}
