//! Parts of the edge through their APIs: calibrate's regression, the replay's prices,
//! settings and context windows, and the cli's one way into the library.

mod fit {
    use prefixsim::calibrate::fit::*;

    fn rows(f: impl Fn(f64, f64) -> f64, pts: &[(f64, f64)]) -> Vec<Row> {
        pts.iter().map(|&(p, c)| Row { prefill: p, cached: c, ttft_s: f(p, c) }).collect()
    }

    const PTS: [(f64, f64); 8] = [
        (1000.0, 0.0),
        (20_000.0, 5000.0),
        (5000.0, 80_000.0),
        (60_000.0, 10_000.0),
        (300.0, 150_000.0),
        (12_000.0, 40_000.0),
        (90_000.0, 0.0),
        (2500.0, 120_000.0),
    ];

    #[test]
    fn exact_data_is_recovered_by_both_losses() {
        // ttft = 0.8 + p / 20,000 + c / 100,000.
        let r = rows(|p, c| 0.8 + p / 20_000.0 + c / 100_000.0, &PTS);
        for loss in [Loss::Absolute, Loss::Squared] {
            let f = fit(&r, loss, false);
            assert!((f.overhead_s - 0.8).abs() < 1e-6, "{loss:?} {f:?}");
            assert!((1.0 / f.s_per_prefill.unwrap() - 20_000.0).abs() < 1e-2);
            assert!((1.0 / f.s_per_cached.unwrap() - 100_000.0).abs() < 1e-1);
        }
    }

    #[test]
    fn one_outlier_moves_least_squares_not_the_median_fit() {
        let mut r = rows(|p, c| 0.8 + p / 20_000.0 + c / 100_000.0, &PTS);
        r[1].ttft_s += 60.0; // a retried request
        let l1 = fit(&r, Loss::Absolute, false);
        let l2 = fit(&r, Loss::Squared, false);
        assert!((l1.overhead_s - 0.8).abs() < 1e-3, "{l1:?}");
        assert!((1.0 / l1.s_per_prefill.unwrap() - 20_000.0).abs() < 50.0, "{l1:?}");
        assert!((l2.overhead_s - 0.8).abs() > 1.0, "least squares is pulled: {l2:?}");
    }

    #[test]
    fn negative_slopes_are_held_at_zero_and_constant_columns_are_unidentified() {
        // TTFT falls with cached tokens: the constraint keeps b at 0, never negative.
        let r = rows(|p, c| 2.0 + p / 10_000.0 - c / 1e6, &PTS);
        let f = fit(&r, Loss::Absolute, false);
        assert_eq!(f.s_per_cached, Some(0.0));
        // No cache reads: the column is not identifiable.
        let r = rows(|p, _| 1.0 + p / 10_000.0, &[(1000.0, 0.0), (5000.0, 0.0), (9000.0, 0.0)]);
        let f = fit(&r, Loss::Absolute, false);
        assert_eq!(f.s_per_cached, None);
        assert!((f.overhead_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn an_attention_term_is_recovered_and_absent_when_not_asked_for() {
        // ttft = 0.8 + p / 50,000 + c / 500,000 + p (p + c) / 2e10.
        let t = |p: f64, c: f64| 0.8 + p / 50_000.0 + c / 500_000.0 + p * (p + c) / 2e10;
        let r = rows(t, &PTS);
        let f = fit(&r, Loss::Absolute, true);
        assert!((1.0 / f.s_per_attention.unwrap() / 2e10 - 1.0).abs() < 1e-4, "{f:?}");
        assert!((1.0 / f.s_per_prefill.unwrap() / 50_000.0 - 1.0).abs() < 1e-4, "{f:?}");
        assert_eq!(fit(&r, Loss::Absolute, false).s_per_attention, None);
        // Without the term in the data, its coefficient stays (almost) 0.
        let r = rows(|p, c| 0.8 + p / 50_000.0 + c / 500_000.0, &PTS);
        assert!(fit(&r, Loss::Absolute, true).s_per_attention.unwrap() < 1e-15);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert!((quantile(&v, 0.025) - 1.075).abs() < 1e-12);
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
    }
}

mod prices {
    use prefixsim::replay::prices::*;

    #[test]
    fn cost_is_the_spec_formula() {
        let m = prefixsim::config::preset("claude-sonnet-4.5").unwrap();
        let mut a = Account {
            cache_read: 1_000_000,
            cache_write_5m: 1_000_000,
            cache_write_1h: 0,
            uncached: 1_000_000,
            output: 1_000_000,
        };
        // 3 * (1 + 1.25 + 0.1) + 15 = 22.05; with 1h writes 3 * (1 + 2 + 0.1) + 15 = 24.3;
        // no caching: 3 * 3 + 15 = 24.
        assert!((cost_usd(&a, &m) - 22.05).abs() < 1e-9);
        assert!((cost_uncached_usd(&a, &m) - 24.0).abs() < 1e-9);
        std::mem::swap(&mut a.cache_write_5m, &mut a.cache_write_1h);
        assert!((cost_usd(&a, &m) - 24.3).abs() < 1e-9);
    }

    #[test]
    fn trace_model_names_map_to_presets() {
        let name = |n: &str| preset_for(n).map(|p| p.name);
        assert_eq!(name("claude-opus-4-5-20251101").as_deref(), Some("claude-opus-4.5"));
        assert_eq!(name("claude-haiku-4-5-20251001").as_deref(), Some("claude-haiku-4.5"));
        assert_eq!(name("claude-sonnet-4-20250514").as_deref(), Some("claude-sonnet-4"));
        assert_eq!(name("claude-opus-4-6").as_deref(), Some("claude-opus-4.6"));
        assert_eq!(name("claude-sonnet-4.5").as_deref(), Some("claude-sonnet-4.5"));
        assert_eq!(name("gpt-4o"), None);
    }
}

mod settings {
    use prefixsim::dist::Dist;
    use prefixsim::replay::settings::*;
    use prefixsim::time::{US_PER_H, US_PER_MIN};

    #[test]
    fn keys_apply_and_refuse() {
        let mut s = ReplaySettings::new(TraceFormat::Mooncake);
        s.apply_set("cache.ttl=1h").unwrap();
        assert_eq!(s.cache.ttl_us, Some(US_PER_H));
        assert!(s.cache.bills_1h());
        s.apply_set("cache.capacity_tokens=1_000").unwrap();
        assert_eq!(s.cache.capacity_tokens, Some(1000));
        s.apply_set("latency.overhead=const(250ms)").unwrap();
        assert_eq!(s.latency.overhead_us, Dist::Const(250_000.0));
        s.apply_set("latency.decode_rate=uniform(40, 60)").unwrap();
        assert!(!s.latency.decode_rate.is_const());
        s.apply_set("model=\"claude-opus-4.5\"").unwrap();
        assert_eq!(s.model.input_usd_per_mtok, 5.0);
        let e = s.apply_set("cache.ttl=-2m").unwrap_err();
        assert!(e.to_string().contains("positive duration (5m, 1h, 90s, ...) or none"), "{e}");
        s.apply_set("cache.ttl=2m").unwrap();
        assert_eq!(s.cache.ttl_us, Some(2 * US_PER_MIN));
        assert!(s.apply_set("cache.size=3").unwrap_err().to_string().contains("unknown key"));
        assert!(s.apply_set("block_size=0").is_err());
        s.apply_set("cache.policy=anthropic").unwrap();
        assert!(s.validate().is_err());
        s.apply_set("model=per-request").unwrap();
        assert!(s.per_request_prices);
        let mut cc = ReplaySettings::new(TraceFormat::ClaudeCode);
        assert!(cc.per_request_prices, "claude-code traces record each request's model");
        cc.apply_set("model=claude-opus-4.5").unwrap();
        assert!(!cc.per_request_prices);
        assert!(!ReplaySettings::new(TraceFormat::Mooncake).per_request_prices);
        assert!(cc.apply_set("block_size=64").unwrap_err().to_string().contains("mooncake"));
    }

    #[test]
    fn a_ttl_the_api_does_not_sell_replays_only_under_every_block() {
        let mut s = ReplaySettings::new(TraceFormat::Requests);
        s.apply_set("cache.ttl=7m").unwrap();
        let e = s.validate().unwrap_err();
        assert_eq!(e, SettingError::TtlNotOffered("7min".into()));
        assert!(e.to_string().contains("5m and 1h only"), "{e}");
        s.apply_set("cache.policy=every-block").unwrap();
        s.validate().unwrap();
        assert!(!s.cache.is_api_ttl());
        assert!(s.cache.bills_1h(), "above 5 minutes: the 1-hour write price");
    }
}

mod window {
    use prefixsim::replay::window::*;

    #[test]
    fn windows_follow_the_presets() {
        // Haiku 4.5: 200k. 199,000 + 1,000 fits exactly; one more token does not. Sonnet 4.5
        // offers 1M on request (served traffic may use it); Sonnet 4.6: 1M. A model that is
        // not a preset is not checked.
        assert!(check("claude-haiku-4-5-20251001", 199_000, 1_000).is_ok());
        let e = check("claude-haiku-4-5-20251001", 199_000, 1_001).unwrap_err().to_string();
        assert!(e.contains("200001 tokens") && e.contains("claude-haiku-4.5"), "{e}");
        assert!(check("claude-sonnet-4-5-20250929", 252_597, 1_828).is_ok());
        assert!(check("claude-sonnet-4-5-20250929", 999_000, 1_001).is_err());
        assert!(check("claude-sonnet-4-6", 900_000, 1_000).is_ok());
        assert!(check("gpt-9", u64::MAX, 1).is_ok());
    }
}

/// ARCHITECTURE.md's `cli -> api -> exec`: the commands that run experiments (or write
/// their results) reach the library through `crate::api` only, never the executor, the
/// sweep pipeline, the model, the limits or the experiment resolver behind it.
#[test]
fn commands_that_run_experiments_go_through_api() {
    let sources = [
        ("run.rs", include_str!("../../src/cli/run.rs")),
        ("sweep.rs", include_str!("../../src/cli/sweep.rs")),
        ("tune.rs", include_str!("../../src/cli/tune.rs")),
        ("merge.rs", include_str!("../../src/cli/merge.rs")),
        ("serve.rs", include_str!("../../src/cli/serve.rs")),
        ("replay.rs", include_str!("../../src/cli/replay.rs")),
    ];
    let behind = ["exec", "sweep", "model", "limits", "config"];
    for (file, text) in sources {
        assert!(text.contains("crate::api"), "{file} does not call api");
        let code = text.lines().filter(|l| !l.trim_start().starts_with("//"));
        for line in code {
            for m in behind {
                let path = format!("crate::{m}");
                assert!(!line.contains(&path), "cli/{file} reaches past api: {line}");
            }
        }
    }
}
