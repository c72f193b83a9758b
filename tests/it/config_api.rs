//! Experiment files through `config`'s API: the shipped experiments, `--set` errors, sweep
//! keys, strategy labels, and (`resolve`) defaults, round trips and errors naming the key.

use std::path::Path;

mod resolve;

use prefixsim::config::{flatten_keys, sweep_table, Release, Strategy};
use prefixsim::config::{load, load_default, parse_strategy, parse_table, strategy_label};

#[test]
fn shipped_experiments_resolve() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# "), "{} needs a first-line comment", path.display());
        let (table, exp) = load(&path, &[]).unwrap();
        assert!(!exp.question.is_empty(), "{}", path.display());
        if let Some(sweep) = sweep_table(&table) {
            assert!(!flatten_keys(sweep).is_empty());
        }
        n += 1;
    }
    assert!(n >= 4);
}

#[test]
fn an_error_from_a_set_names_the_set() {
    let sets = ["workload.agents=3".to_string(), "cache.ttl=-5s".to_string()];
    let e = load_default(&sets).unwrap_err().to_string();
    assert!(e.starts_with("--set cache.ttl=-5s: <default experiment>: `cache.ttl`"), "{e}");
    let e = load_default(&["workload.agentz=3".into()]).unwrap_err().to_string();
    assert!(e.starts_with("--set workload.agentz=3: "), "{e}");
}

#[test]
fn flattens_both_spellings() {
    let t = parse_table("[s]\n\"a.b\" = 1\nc.d = 2\n", "x").unwrap();
    let keys: Vec<String> = flatten_keys(sweep_or(&t)).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["a.b", "c.d"]);
}

fn sweep_or(t: &toml::Table) -> &toml::Table {
    t["s"].as_table().unwrap()
}

#[test]
fn strategies_round_trip() {
    for label in [
        "eager",
        "wait_first(max_wait=5s)",
        "wait_first(max_wait=2500ms, release=timer)",
        "wait_first(max_wait=0s)",
        "stagger(interval=1s)",
        "sequential",
        "prewarm",
    ] {
        let s = parse_strategy(label).unwrap();
        assert_eq!(strategy_label(&s), label);
    }
    assert_eq!(
        parse_strategy("wait_first").unwrap(),
        Strategy::WaitFirst { max_wait_us: 5_000_000, release: Release::OnReady }
    );
    assert_eq!(
        parse_strategy(" wait_first( 5000ms ) ").unwrap(),
        parse_strategy("wait_first").unwrap()
    );
}

#[test]
fn refuses_bad_strategies() {
    for bad in [
        "eagre",
        "wait_first(max_wait=-1s)",
        "wait_first(max_wait=5)",
        "eager(1s)",
        "stagger(step=1s)",
        "wait_first(release=later)",
    ] {
        assert!(parse_strategy(bad).is_err(), "{bad}");
    }
    assert!(parse_strategy("eagre").unwrap_err().to_string().contains("did you mean `eager`"));
}
