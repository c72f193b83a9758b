//! Numbers for people: the one short format of figures' tick labels, the report's sentences
//! and the calibration table (kept outside `plot` so that those work without the figures).

/// A number for a tick label or a sentence: 3 significant digits, no trailing zeros.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    let decimals = (2 - mag).clamp(0, 6) as usize;
    let s = format!("{v:.decimals$}");
    let s =
        if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_three_significant_digits() {
        assert_eq!(num(0.123456), "0.123");
        assert_eq!(num(42.0), "42");
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(-0.0001), "-0.0001");
        assert_eq!(num(5.0), "5");
    }
}
