//! Numbers for people: the one short format of figures' tick labels, the report's sentences,
//! the hold answer, percentages and the calibration table (kept outside `plot` so that those work without the figures).

/// A number for a tick label or a sentence: 3 significant digits, no trailing zeros.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    fixed((2 - mag).clamp(0, 6) as usize, v)
}

/// `v` to `decimals` places, without trailing zeros (and never `-0`).
pub fn fixed(decimals: usize, v: f64) -> String {
    let s = format!("{v:.decimals$}");
    let s =
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A share as a percentage to one decimal: `0.696` -> `69.6%`.
pub fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A duration of `us` microseconds for a sentence, in the largest of h, min, s and ms that it
/// reaches, 3 significant digits: `27.8 h`, `24 h`, `5.5 min`, `0.25 s` below a second is `250 ms`.
pub fn hours(us: u64) -> String {
    const UNITS: [(f64, &str); 3] = [(3.6e9, "h"), (6e7, "min"), (1e6, "s")];
    let x = us as f64;
    match UNITS.iter().find(|(per, _)| x >= *per) {
        Some((per, unit)) => format!("{} {unit}", num(x / per)),
        None => format!("{} ms", num(x / 1e3)),
    }
}

/// A point in simulated time, or a duration, to the microsecond in hours, minutes and seconds:
/// `24h 0min 0.031979s`, `5min 3.2s`, `0.25s` (an error that names an instant past a limit).
pub fn clock(us: u64) -> String {
    let (h, rest) = (us / 3_600_000_000, us % 3_600_000_000);
    let (m, rest) = (rest / 60_000_000, rest % 60_000_000);
    let s = fixed(6, rest as f64 / 1e6);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}min {s}s"),
        (h, m) => format!("{h}h {m}min {s}s"),
    }
}

/// A rate per second for a progress bar, rounded: `41/s`, `4.24/s`, `0.35/s` (indicatif's own
/// `{per_sec}` prints `40.8412/s`).
#[cfg(feature = "sweep")]
pub fn per_sec(rate: f64) -> String {
    match rate {
        r if !r.is_finite() => "-/s".to_string(),
        r if r >= 10.0 => format!("{r:.0}/s"),
        r => format!("{}/s", num(r)),
    }
}

/// `text` with its first letter in upper case (a sentence printed on its own).
#[cfg(any(feature = "cli", feature = "python"))]
pub fn capitalised(text: &str) -> String {
    let mut c = text.chars();
    c.next().map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// A tick label on a linear axis spanning `span`: `num`'s 3 significant digits, or more
/// decimals where the span needs them to tell neighbouring ticks apart (about ten ticks: a
/// span of 4 s near 276 s gives `276.5`, not a row of `276`s).
#[cfg(feature = "plot")]
pub fn tick(v: f64, span: f64) -> String {
    let plain = num(v);
    if !(span.is_finite() && span > 0.0 && v.is_finite()) {
        return plain;
    }
    let needed = (-(span / 10.0).log10().floor()).clamp(0.0, 6.0) as usize;
    let have = plain.split_once('.').map_or(0, |(_, d)| d.len());
    if needed <= have {
        return plain;
    }
    fixed(needed, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_keep_the_digits_that_tell_them_apart() {
        assert_eq!(tick(276.5, 4.0), "276.5");
        assert_eq!(tick(276.0, 4.0), "276");
        assert_eq!(tick(0.35, 0.4), "0.35");
        assert_eq!(tick(12345.0, 20000.0), "12345");
        let labels: Vec<String> = (0..9).map(|i| tick(276.0 + 0.5 * i as f64, 4.0)).collect();
        let distinct: std::collections::BTreeSet<_> = labels.iter().collect();
        assert_eq!(distinct.len(), labels.len(), "{labels:?}");
    }

    #[test]
    fn durations_read_in_their_largest_unit() {
        assert_eq!(hours(99_999_000_000), "27.8 h");
        assert_eq!(hours(86_400_000_000), "24 h");
        assert_eq!(hours(330_000_000), "5.5 min");
        assert_eq!(hours(1_500_000), "1.5 s");
        assert_eq!(hours(250_000), "250 ms");
        assert_eq!(clock(86_400_031_979), "24h 0min 0.031979s");
        assert_eq!(clock(303_200_000), "5min 3.2s");
        assert_eq!(clock(250_000), "0.25s");
        assert_eq!(clock(0), "0s");
    }

    #[test]
    #[cfg(feature = "sweep")]
    fn rates_are_rounded() {
        assert_eq!(per_sec(40.8412), "41/s");
        assert_eq!(per_sec(4.2371), "4.24/s");
        assert_eq!(per_sec(0.0), "0/s");
        assert_eq!(per_sec(f64::INFINITY), "-/s");
    }

    #[test]
    fn numbers_have_three_significant_digits() {
        assert_eq!(num(0.123456), "0.123");
        assert_eq!(num(42.0), "42");
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(-0.0001), "-0.0001");
        assert_eq!(num(5.0), "5");
    }
}
