//! Units of the figures and the report through the library: axes and their ticks, colours,
//! direct labels, and the report's words, tables and terminal bars.

use plotters::prelude::*;
use prefixsim::plot::axis::{is_hold_cap, x_axis};
use prefixsim::plot::labels::{overlaps, place_beside, stack, PxBox, END_LABEL_LINE_PX};
use prefixsim::plot::scale::{linear, log_scale, wants_log, MAX_TICKS};
use prefixsim::plot::style::strategy_color;
use prefixsim::report::doc::{Block, Doc};
use prefixsim::report::table::bar;
use prefixsim::report::words::{and_list, count, is_are, pct, secs, secs_delta, usd, usd_ci};

/// `values` want a log axis, and the one from `lo` to `hi` has the tick labels `want`.
fn log_labels(values: &[f64], (lo, hi): (f64, f64), want: &[&str]) {
    assert!(wants_log(values));
    let s = log_scale(lo, hi);
    let labels: Vec<String> = s.ticks.iter().map(|t| s.label(*t)).collect();
    assert_eq!(labels, want);
}

#[test]
fn log_axes_of_prefix_tokens_and_hold_caps_have_short_labels() {
    let tokens = [5e3, 1e4, 2.5e4, 5e4, 1e5, 1.5e5, 2e5, 3e5, 5e5];
    log_labels(&tokens, (5e3, 5e5), &["5k", "10k", "20k", "50k", "100k", "200k", "500k"]);
    log_labels(&[1.0, 2.0, 5.0, 10.0, 30.0], (1.0, 30.0), &["1", "2", "5", "10", "20"]);
}

#[test]
fn an_axis_with_zero_is_linear_and_its_ticks_are_evenly_spaced() {
    assert!(!wants_log(&[0.0, 60.0, 120.0, 600.0]));
    let s = linear(0.0, 600.0, true);
    assert!(!s.log && s.lo == 0.0);
    assert!(s.ticks.len() <= MAX_TICKS && s.ticks.len() >= 4, "{:?}", s.ticks);
    let d: Vec<f64> = s.ticks.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(d.iter().all(|x| (x - d[0]).abs() < 1e-9), "{d:?}");
}

#[test]
fn one_family_one_hue_and_variants_differ() {
    let all: Vec<String> =
        ["eager", "wait_first(max_wait=1s)", "wait_first(max_wait=5s)"].map(String::from).into();
    assert_eq!(strategy_color("eager", &all), RGBColor(214, 39, 40));
    assert_ne!(strategy_color(&all[1], &all), strategy_color(&all[2], &all));
}

#[test]
fn stacked_labels_keep_their_order_never_overlap_and_stay_in_the_rows() {
    let line = END_LABEL_LINE_PX;
    // Three ends within a few pixels, one label two lines tall, near the bottom.
    let ends = [400, 402, 398, 100];
    let heights = [line, 2 * line, line, line];
    let tops = stack(&ends, &heights, (50, 410));
    let mut boxes: Vec<(i32, i32)> = tops.iter().zip(heights).map(|(t, h)| (*t, t + h)).collect();
    boxes.sort();
    for w in boxes.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlap: {boxes:?}");
    }
    assert!(boxes.iter().all(|b| b.0 >= 50 - line / 2 && b.1 <= 410 + line / 2), "{boxes:?}");
    assert!(tops[2] < tops[0] && tops[0] < tops[1], "order of the ends kept: {tops:?}");
    assert_eq!(tops[3], 100 - line / 2, "a label alone sits level with its line");
}

#[test]
fn a_label_beside_a_point_avoids_the_data_and_other_labels() {
    let data = (120, 90, 40, 40);
    let mut taken = vec![data];
    let labels = [((100, 100), "a".to_string(), 60), ((100, 104), "b".to_string(), 60)];
    let placed = place_beside(&labels, 20, (400, 300), &mut taken);
    assert_eq!(placed.len(), 2);
    let boxes: Vec<PxBox> =
        placed.iter().map(|p| (if p.left { p.x - 60 } else { p.x }, p.y - 10, 60, 20)).collect();
    assert!(!overlaps(boxes[0], boxes[1]) && boxes.iter().all(|b| !overlaps(*b, data)));
}

#[test]
fn the_hold_cap_keys() {
    assert!(is_hold_cap("max_wait") && is_hold_cap("strategy.wait_first.max_wait"));
    assert!(is_hold_cap("prefix_stagger_ms"));
    assert!(!is_hold_cap("strategy.stagger.interval") && !is_hold_cap("workload.agents"));
}

#[test]
fn hold_caps_are_to_scale_on_a_log_axis_with_5s_at_its_value() {
    let v: Vec<String> = ["1s", "2s", "10s", "30s"].map(String::from).into();
    let x = x_axis("max_wait", &v);
    assert!(x.log && !x.categorical && !x.words);
    assert_eq!(x.positions, [0.0, 2f64.log10(), 1.0, 30f64.log10()]);
    assert_eq!(x.marker.map(|m| m.0), Some(5f64.log10()));
    let y = x_axis("workload.parent_idle", &["0s".into(), "1min".into(), "10min".into()]);
    assert!(!y.log && y.positions == [0.0, 60.0, 600.0], "linear, to scale: {y:?}");
}

#[test]
fn report_words_agree_in_number_and_carry_their_units() {
    assert_eq!(format!("{} {}", count(1, "point", "points"), is_are(1)), "1 point is");
    assert_eq!(format!("{} {}", count(7, "point", "points"), is_are(7)), "7 points are");
    assert_eq!(count(0, "slice", "slices"), "0 slices");
    let cases = [
        (usd(0.61), "$0.610"),
        (usd(22.391), "$22.4"),
        (usd(0.0), "$0"),
        (usd(-0.12), "-$0.120"),
        (usd_ci(0.827, 0.05512), "$0.827 ± 0.055"),
        (usd_ci(2.85, 0.00000023), "$2.85 ± 0"),
        (secs(2.8214), "2.82 s"),
        (secs(0.0), "0 s"),
        (secs_delta(1.2149), "+1.21 s"),
        (secs_delta(-0.3), "-0.300 s"),
        (pct(0.6957), "69.6%"),
        (and_list(&["a".into(), "b".into(), "c".into()]), "a, b and c"),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

#[test]
fn a_report_table_renders_in_both_formats() {
    let d = Doc {
        title: "T".into(),
        blocks: vec![Block::Table(
            vec!["a".into(), "b".into()],
            vec![vec!["1|2".into(), "3".into()]],
        )],
    };
    assert_eq!(d.to_markdown(), "# T\n\n| a | b |\n|---|---|\n| 1\\|2 | 3 |\n");
    assert!(d
        .to_html(|_| None)
        .contains("<tr><td class=\"n\">1|2</td><td class=\"n\">3</td></tr>"));
}

#[test]
fn terminal_bars_scale_in_eighths_of_24_cells() {
    assert_eq!(bar(1.0, 1.0).chars().count(), 24);
    assert_eq!(bar(0.5, 1.0), "█".repeat(12));
    assert_eq!(bar(1.0 / (24.0 * 8.0), 1.0), "▏");
    assert_eq!(bar(0.0, 1.0), "");
}
