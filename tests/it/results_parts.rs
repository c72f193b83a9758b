//! The results, time, rng, dist and limits modules through their APIs, and helpers other
//! modules' tests share.

use prefixsim::metrics::LATENCY_NAMES;
use prefixsim::results::Results;

/// Every (point, strategy, latency) of `r`'s points and strategies that has a histogram, by
/// point, strategy and latency (decodes nothing).
pub fn histogram_keys(r: &Results) -> Vec<(u32, String, String)> {
    let mut keys = Vec::new();
    for p in r.points() {
        for s in r.strategies() {
            for l in LATENCY_NAMES {
                let key = (p, s.clone(), l.to_string());
                if r.histograms.contains_key(&key) {
                    keys.push(key);
                }
            }
        }
    }
    keys
}

mod time {
    use prefixsim::time::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration_us("500ms"), Ok(500_000));
        assert_eq!(parse_duration_us("5s"), Ok(5_000_000));
        assert_eq!(parse_duration_us("1.5s"), Ok(1_500_000));
        assert_eq!(parse_duration_us("5min"), Ok(300_000_000));
        assert_eq!(parse_duration_us("1h"), Ok(3_600_000_000));
        assert_eq!(parse_duration_us("250us"), Ok(250));
        assert_eq!(parse_duration_us("0"), Ok(0));
    }

    #[test]
    fn refuses_bad_input() {
        assert!(matches!(parse_duration_us("-1s"), Err(DurationError::Negative(_))));
        assert!(matches!(parse_duration_us("5"), Err(DurationError::MissingUnit(_))));
        assert!(matches!(parse_duration_us("5parsecs"), Err(DurationError::UnknownUnit { .. })));
        assert!(matches!(parse_duration_us("fast"), Err(DurationError::NotANumber(_))));
    }

    #[test]
    fn instants_and_durations_combine_as_their_units_do() {
        let t = SimTime::from_us(10);
        let d = SimDuration::from_us(5);
        assert_eq!((t + d).as_us(), 15);
        assert_eq!((t - d).as_us(), 5);
        assert_eq!((t + d) - t, d);
        let mut u = t;
        u += d;
        assert_eq!(u, SimTime::from_us(15));
        assert_eq!(t.saturating_since(u), SimDuration::ZERO);
        assert_eq!(SimTime::MAX.saturating_add(d), SimTime::MAX);
        assert_eq!((d / 2, d + d), (SimDuration::from_us(2), SimDuration::from_us(10)));
        assert_eq!(SimDuration::from_secs(2), SimDuration::from_ms(2_000));
    }

    #[test]
    fn times_serialize_as_microseconds_and_display_as_people_read_them() {
        let t = SimTime::from_us(5_000_000);
        assert_eq!(serde_json::to_string(&t).unwrap(), "5000000");
        assert_eq!(serde_json::from_str::<SimDuration>("250").unwrap(), SimDuration::from_us(250));
        assert_eq!(
            (t.to_string(), SimDuration::from_ms(1_500).to_string()),
            ("5s".into(), "1500ms".into())
        );
    }

    #[test]
    fn human_form_round_trips() {
        for us in [0, 250, 1_000, 1_500_000, 5_000_000, 300_000_000, 3_600_000_000] {
            let text = Human(us).to_string();
            assert_eq!(parse_duration_us(&text), Ok(us), "{text}");
        }
    }

    #[test]
    fn exact_form_round_trips_in_its_largest_unit() {
        let cases = [(0, "0s"), (5_000_000, "5s"), (1_500_000, "1500ms"), (1_000_500, "1000500us")];
        // People see a duration that is not whole in its largest unit as seconds.
        assert_eq!(
            (Human(1_234_567).to_string(), Human(250).to_string()),
            ("1.235s".into(), "250us".into())
        );
        for (us, text) in cases {
            assert_eq!(exact_duration(us), text);
            assert_eq!(parse_duration_us(text), Ok(us));
        }
    }
}

mod limits {
    use prefixsim::config::ExperimentSpec;
    use prefixsim::limits::*;

    fn exp(sets: &[&str]) -> ExperimentSpec {
        let mut t = prefixsim::config::parse_table("", "x.toml").unwrap();
        for s in sets {
            prefixsim::config::apply_set(&mut t, s).unwrap();
        }
        prefixsim::config::resolve(&t, "x.toml").unwrap()
    }

    /// Closed form: 10 agents x const(3) turns + the prewarm request, 5 strategies x 100
    /// replications -> 5 * 100 * 31 requests; tokens per agent 3 * 50,100 + 9/2 * 600.
    #[test]
    fn run_size_matches_hand_computation() {
        let e = exp(&["workload.turns=\"const(3)\""]);
        let size = run_size(&e);
        assert_eq!(size.requests, 31.0);
        assert_eq!(size.tokens, 10.0 * (3.0 * 50_100.0 + 4.5 * 600.0));
        let est = estimate_run(&e, true);
        assert_eq!(est.parts[0].1, 5.0 * 100.0 * 31.0);
        assert!(est.check(&WorkLimits::default(), false).is_ok());
    }

    #[test]
    fn refusals_name_the_estimate_the_limit_and_the_cause() {
        let e = exp(&["replications=1000000000"]);
        let err = estimate_run(&e, false).check(&WorkLimits::default(), false).unwrap_err();
        assert!(matches!(
            err,
            LimitError::Above { resource: Resource::Requests, key: "limits.max_requests", .. }
        ));
        let msg = err.to_string();
        assert!(msg.contains("limits.max_requests") && msg.contains("replications = 1000000000"));
        assert!(estimate_run(&e, false).check(&WorkLimits::default(), true).is_ok());
        let e = exp(&["workload.agents=1000000000"]);
        let msg = estimate_run(&e, false).check(&WorkLimits::default(), false).unwrap_err();
        let msg = msg.to_string();
        assert!(msg.contains("workload.agents = 1000000000"), "{msg}");
        let e = exp(&["workload.turns=10000000000"]);
        let msg = estimate_run(&e, false).check(&WorkLimits::default(), false).unwrap_err();
        let msg = msg.to_string();
        assert!(msg.contains("workload.turns"), "{msg}");
    }

    #[test]
    fn limits_come_from_the_table() {
        let t: toml::Table = "[limits]\nmax_points = 7\nmax_memory_mb = 3\n".parse().unwrap();
        let l = WorkLimits::from_table(&t);
        assert_eq!((l.max_points, l.max_memory_mb), (7, 3));
        assert_eq!(l.max_requests, WorkLimits::default().max_requests);
    }

    #[test]
    fn sizes_print_for_people() {
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(sci(12.0), "12");
        assert_eq!(sci(3.3e11), "3.30e11");
    }
}

mod metrics {
    use prefixsim::metrics::*;

    /// A quantile is the sorted values' entry at rank `ceil(q * n)` (at least 1), whichever
    /// way it is found (the ends without a selection), and the range is the sorted ends.
    #[test]
    fn quantiles_and_range_are_the_sorted_values() {
        let mut x = 7u64;
        let mut next = || {
            x = prefixsim::rng::mix64(x);
            x % 1_000
        };
        let mut h = new_histogram();
        for n in [1, 2, 3, 16, 80, 99, 100, 101, 250] {
            let mut s = Samples::default();
            (0..n).for_each(|_| s.record(next()));
            let mut sorted = s.values().to_vec();
            sorted.sort_unstable();
            for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
                let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
                assert_eq!(s.value_at_quantile(q), sorted[rank - 1], "n {n}, q {q}");
            }
            assert_eq!(s.record_into(&mut h), Some((sorted[0], sorted[n - 1])), "n {n}");
        }
        assert_eq!(Samples::default().value_at_quantile(0.5), 0);
        assert_eq!(Samples::default().record_into(&mut h), None);
    }
}

mod rng {
    use prefixsim::rng::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: u64 = stream(42, &[0, 1]).random();
        let b: u64 = stream(42, &[0, 1]).random();
        let c: u64 = stream(42, &[0, 2]).random();
        let d: u64 = stream(42, &[1, 1]).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        assert_ne!(Node::new(1, &[2, 3]), Node::new(1, &[3, 2]));
    }

    /// The first numbers of two streams, as the simulator's results were computed with them:
    /// a generator whose stream changes (rand's, or how a seed becomes its key) fails here.
    #[test]
    fn the_streams_are_pinned() {
        let mut a = stream(42, &[0, 1]);
        let first: [u64; 3] = std::array::from_fn(|_| a.random());
        assert_eq!(first, [0x88cd_8e18_118b_354f, 0x51d5_7f41_7e93_6227, 0x85c7_c2ca_6812_6cbc]);
        // Past the first blocks (80 words), and a float.
        let mut b = stream(7, &[1, 2]);
        (0..40).for_each(|_| _ = b.random::<u64>());
        let later: [u64; 3] = std::array::from_fn(|_| b.random());
        assert_eq!(later, [0x2006_f2ab_ae15_567a, 0xb351_43a4_ec88_6079, 0xe880_9871_ca9e_fcc4]);
        assert_eq!(b.random::<f64>().to_bits(), 4_607_005_568_526_344_535);
        assert_eq!(stream(7, &[1, 2]), Node::new(7, &[1, 2]).stream(&[]));
    }

    #[test]
    fn a_node_continues_the_path_it_stands_on() {
        for (root, path) in
            [(42, vec![0, 1, 2]), (7, vec![9]), (0, vec![]), (u64::MAX, vec![3, 5, 8, 13])]
        {
            for split in 0..=path.len() {
                let (head, rest) = path.split_at(split);
                let (mut a, mut b) = (Node::new(root, head).stream(rest), stream(root, &path));
                for _ in 0..100 {
                    assert_eq!(a.random::<u64>(), b.random::<u64>(), "{root} {path:?} at {split}");
                }
                let mut reseeded = stream(u64::MAX, &[]);
                reseeded.random::<u64>();
                Node::new(root, head).reseed(rest, &mut reseeded);
                let mut b = stream(root, &path);
                for _ in 0..100 {
                    assert_eq!(reseeded.random::<u64>(), b.random::<u64>(), "{path:?} at {split}");
                }
                if let Some((&i, below)) = rest.split_first() {
                    let node = Node::new(root, head);
                    let (mut a, mut b) = (node.child(i).stream(below), node.stream(rest));
                    assert_eq!(a.random::<u64>(), b.random::<u64>(), "{path:?} at {split}");
                }
            }
        }
        // The path as first written: a fold of the root's mix over the indices.
        let by_hand = mix64(
            mix64(mix64(42) ^ mix64(5u64.wrapping_add(0x5851_F42D_4C95_7F2D)))
                ^ mix64(6u64.wrapping_add(0x5851_F42D_4C95_7F2D)),
        );
        assert_eq!(Node::new(42, &[5, 6]).stream(&[]), ChaCha8Rng::seed_from_u64(by_hand));
    }
}

mod write {
    use std::fs;
    use std::path::PathBuf;

    use prefixsim::results::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("prefixsim-atomic-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_atomic_file_dropped_before_its_commit_leaves_nothing() {
        let d = scratch("drop");
        let path = d.join("summary.csv");
        let mut f = AtomicFile::create(&path).unwrap();
        f.write("point,strategy\n").unwrap();
        assert!(tmp_path(&path).exists());
        drop(f);
        assert!(!path.exists() && !tmp_path(&path).exists(), "nothing half-written");
        let mut f = AtomicFile::create(&path).unwrap();
        f.write("point,strategy\n").unwrap();
        f.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "point,strategy\n");
        assert!(!tmp_path(&path).exists());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_atomic_write_leaves_no_tmp_file() {
        // The rename fails (the target is a non-empty directory): neither file is left.
        let d = scratch("fail");
        let path = d.join("out");
        fs::create_dir_all(path.join("inside")).unwrap();
        assert!(write_atomic(&path, b"x").is_err());
        assert!(!tmp_path(&path).exists());
        fs::remove_dir_all(&d).unwrap();
    }
}
