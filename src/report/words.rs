//! The report's grammar and units: counts with their noun in the right number ("1 of 7 points
//! is"), money to 3 significant digits (2 for a confidence half-width), seconds with their
//! unit, percentages to one decimal. One place, so every sentence and table agrees.

/// `n` and the noun in the right number: `1 point`, `7 points`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The verb agreeing with `n`: `is` / `are`.
pub fn is_are(n: usize) -> &'static str {
    if n == 1 {
        "is"
    } else {
        "are"
    }
}

/// `x` to `sig` significant digits, trailing zeros kept (`0.610`, `22.4`, `1234`).
pub fn sig(x: f64, sig: i32) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    let decimals = (sig - 1 - mag).clamp(0, 9) as usize;
    let s = format!("{x:.decimals$}");
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        return "0".into();
    }
    s
}

/// Money: `$0.827`, `$22.4`, `-$0.120` (3 significant digits).
pub fn usd(x: f64) -> String {
    format!("{}${}", if x < 0.0 { "-" } else { "" }, sig(x.abs(), 3))
}

/// A mean and its 95% confidence half-width: `$0.827 ± 0.055`. The half-width has 2
/// significant digits but no more decimals than the mean (below that it reads `0`).
pub fn usd_ci(mean: f64, ci: f64) -> String {
    let decimals = |x: f64| (2 - x.abs().log10().floor() as i32).clamp(0, 9);
    let ci_text = match mean != 0.0 && ci > 0.0 && -(ci.log10().floor() as i32) > decimals(mean) {
        true => "0".to_string(),
        false => sig(ci, 2),
    };
    format!("{} ± {ci_text}", usd(mean))
}

/// Seconds with the unit: `2.82 s`, `0 s`, `146 s`.
pub fn secs(x: f64) -> String {
    format!("{} s", sig(x, 3))
}

/// A signed difference in seconds: `+1.21 s`, `-0.300 s`, `+0 s`.
pub fn secs_delta(x: f64) -> String {
    let s = sig(x.abs(), 3);
    if x < 0.0 && s != "0" {
        format!("-{s} s")
    } else {
        format!("+{s} s")
    }
}

pub use crate::numfmt::pct;

/// A JSON scalar as plain text (strings unquoted).
pub fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A list in prose: `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
