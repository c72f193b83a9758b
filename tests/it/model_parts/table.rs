//! Tests: setting a sweep axis's value into an experiment table (`sweep::table`).

use prefixsim::sweep::table::{canonical_key, set_value, set_value_undoable, KeyError};

#[test]
fn dotted_and_strategy_keys() {
    let mut t: toml::Table =
        "strategies = [\"eager\", \"wait_first(release=timer)\"]\n[workload]\nagents = 1\n"
            .parse()
            .unwrap();
    set_value(&mut t, "workload.agents", 8.into()).unwrap();
    set_value(&mut t, "latency.overhead", "const(1s)".into()).unwrap();
    set_value(&mut t, "max_wait", "2s".into()).unwrap();
    assert_eq!(canonical_key("wait_first.max_wait"), "strategy.wait_first.max_wait");
    assert_eq!(canonical_key("stagger.interval"), "strategy.stagger.interval");
    assert_eq!(canonical_key("workload.agents"), "workload.agents");
    assert_eq!(t["workload"]["agents"].as_integer(), Some(8));
    assert_eq!(t["latency"]["overhead"].as_str(), Some("const(1s)"));
    assert_eq!(t["strategies"][1].as_str(), Some("wait_first(max_wait=2s, release=timer)"));
    assert_eq!(t["strategies"][0].as_str(), Some("eager"));
    assert_eq!(
        set_value(&mut t, "strategy.stagger.interval", "1s".into()),
        Err(KeyError::NoSuchStrategy { rest: "stagger.interval".into(), name: "stagger".into() })
    );
    assert_eq!(
        set_value(&mut t, "workload.agents.x", 1.into()),
        Err(KeyError::NotATable { key: "workload.agents.x".into(), part: "agents".into() })
    );
}

#[test]
fn an_undone_set_leaves_the_table_as_it_was() {
    let text = "strategies = [\"eager\", \"wait_first(max_wait=1s)\"]\n[workload]\nagents = 1\n";
    let before: toml::Table = text.parse().unwrap();
    let mut t = before.clone();
    let sets = [
        ("workload.agents", toml::Value::from(8)),
        ("workload.concurrency", 2.into()),
        ("latency.overhead", "const(1s)".into()),
        ("cache.ttl.fork", "1h".into()),
        ("max_wait", "2s".into()),
    ];
    for (key, value) in sets {
        let undo = set_value_undoable(&mut t, key, value.clone()).unwrap();
        let mut want = before.clone();
        set_value(&mut want, key, value).unwrap();
        assert_eq!(t, want, "{key} is set as set_value sets it");
        undo.restore(&mut t);
        assert_eq!(t, before, "{key} undone");
    }
}
