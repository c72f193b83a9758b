//! Statistics over replications (mean, sample standard deviation, 95% confidence half-width
//! from Student's t) and the fixed number and CSV-cell formats of every result file.

/// Mean, sample standard deviation and 95% CI half-width of one metric over replications.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub sd: f64,
    pub ci95: f64,
}

/// Summarize `xs`: sd uses n-1; ci95 = t(0.975, n-1) * sd / sqrt(n); both 0 when n < 2.
pub fn summarize(xs: &[f64]) -> Stat {
    let n = xs.len();
    if n == 0 {
        return Stat { mean: 0.0, sd: 0.0, ci95: 0.0 };
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Stat { mean, sd: 0.0, ci95: 0.0 };
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    let sd = var.sqrt();
    Stat { mean, sd, ci95: t975(n as u64 - 1) * sd / (n as f64).sqrt() }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom: exact table to 30, then the
/// Cornish-Fisher expansion around the normal quantile (error < 1e-5 for df > 30).
pub fn t975(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
        2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
        2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
        2.048407, 2.045230, 2.042272,
    ];
    if df == 0 {
        return f64::NAN;
    }
    if df <= 30 {
        return TABLE[df as usize - 1];
    }
    let z: f64 = 1.959963984540054;
    let n = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// The fixed float format of result files: 6 decimals, and never `-0.000000`.
pub fn fmt6(x: f64) -> String {
    let s = format!("{x:.6}");
    if s == "-0.000000" {
        "0.000000".to_string()
    } else {
        s
    }
}

/// A CSV cell: quoted (with `""` escapes) only when it holds `,`, `"` or a line break.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_sample() {
        // xs = 1..=5: mean 3, sample variance 2.5, sd 1.5811388, ci = 2.776445 * sd / sqrt 5.
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(s.mean, 3.0);
        assert!((s.sd - 2.5f64.sqrt()).abs() < 1e-12);
        assert!((s.ci95 - 2.776445 * 2.5f64.sqrt() / 5f64.sqrt()).abs() < 1e-9);
        assert_eq!(summarize(&[7.0]).ci95, 0.0);
    }

    #[test]
    fn t_quantile_continues_the_table() {
        // Published values: t(0.975, 40) = 2.021075, t(0.975, 120) = 1.979930.
        assert!((t975(40) - 2.021075).abs() < 2e-5, "{}", t975(40));
        assert!((t975(120) - 1.979930).abs() < 1e-5);
    }

    #[test]
    fn cells() {
        assert_eq!(
            csv_cell("wait_first(max_wait=5s, release=timer)"),
            "\"wait_first(max_wait=5s, release=timer)\""
        );
        assert_eq!(csv_cell("eager"), "eager");
        assert_eq!(fmt6(-0.0000001), "0.000000");
    }
}
