//! `fast_exp`: e^x inline, in baseline x86-64 arithmetic (no call, no FMA), within 2^-51 of the
//! true value; `scaled_exp2_64`, its second half, for the lognormal draws rounded to a whole
//! number.

/// Beyond this `fast_exp` defers to libm: e^700 and e^-700 are normal doubles, so the scaling
/// by 2^m below never overflows nor leaves the normal range.
const MAX_ARG: f64 = 700.0;
/// 1.5 * 2^52: adding it to a number below 2^51 in magnitude rounds that number to the
/// nearest integer (ties to even), which lands in the low bits of the sum.
const SHIFT: f64 = 6_755_399_441_055_744.0;
/// 64 / ln 2, rounded: it only chooses `k`, so its error only moves `r` a little (below).
const INV_LN2_64: f64 = f64::from_bits(0x4057_1547_652b_82fe);
/// ln 2 / 64 with its 16 low significand bits cleared (37 significant bits): `k * HI` is exact
/// for |k| < 2^16, and |k| <= 700 * 64 / ln 2 < 64,633 here.
const LN2_64_HI: f64 = f64::from_bits(0x3f86_2e42_fefa_0000);
/// ln 2 / 64 - `LN2_64_HI`, rounded to nearest.
const LN2_64_LO: f64 = f64::from_bits(0x3d1c_f79a_bc9e_3b3a);
/// Taylor coefficients 1/n!, each a correctly rounded division.
const C2: f64 = 1.0 / 2.0;
const C3: f64 = 1.0 / 6.0;
const C4: f64 = 1.0 / 24.0;
const C5: f64 = 1.0 / 120.0;

/// 2^(j/64) for j in 0..64, each rounded to the nearest double, as bits. Generated with
/// Python's `decimal` at 60 digits: `float((Decimal(2).ln() * j / 64).exp())` (a correctly
/// rounded conversion); `the_table_is_two_to_the_j_over_64` checks every entry.
const TABLE: [u64; 64] = [
    0x3ff0_0000_0000_0000,
    0x3ff0_2c9a_3e77_8061,
    0x3ff0_59b0_d315_8574,
    0x3ff0_8745_1875_9bc8,
    0x3ff0_b558_6cf9_890f,
    0x3ff0_e3ec_32d3_d1a2,
    0x3ff1_1301_d012_5b51,
    0x3ff1_429a_aea9_2de0,
    0x3ff1_72b8_3c7d_517b,
    0x3ff1_a35b_eb6f_cb75,
    0x3ff1_d487_3168_b9aa,
    0x3ff2_063b_8862_8cd6,
    0x3ff2_387a_6e75_6238,
    0x3ff2_6b45_65e2_7cdd,
    0x3ff2_9e9d_f51f_dee1,
    0x3ff2_d285_a6e4_030b,
    0x3ff3_06fe_0a31_b715,
    0x3ff3_3c08_b264_16ff,
    0x3ff3_71a7_373a_a9cb,
    0x3ff3_a7db_34e5_9ff7,
    0x3ff3_dea6_4c12_3422,
    0x3ff4_160a_21f7_2e2a,
    0x3ff4_4e08_6061_892d,
    0x3ff4_86a2_b5c1_3cd0,
    0x3ff4_bfda_d536_2a27,
    0x3ff4_f9b2_769d_2ca7,
    0x3ff5_342b_569d_4f82,
    0x3ff5_6f47_36b5_27da,
    0x3ff5_ab07_dd48_5429,
    0x3ff5_e76f_15ad_2148,
    0x3ff6_247e_b03a_5585,
    0x3ff6_6238_8255_2225,
    0x3ff6_a09e_667f_3bcd,
    0x3ff6_dfb2_3c65_1a2f,
    0x3ff7_1f75_e8ec_5f74,
    0x3ff7_5feb_5642_67c9,
    0x3ff7_a114_73eb_0187,
    0x3ff7_e2f3_36cf_4e62,
    0x3ff8_2589_994c_ce13,
    0x3ff8_68d9_9b44_92ed,
    0x3ff8_ace5_422a_a0db,
    0x3ff8_f1ae_9915_7736,
    0x3ff9_3737_b0cd_c5e5,
    0x3ff9_7d82_9fde_4e50,
    0x3ff9_c491_82a3_f090,
    0x3ffa_0c66_7b5d_e565,
    0x3ffa_5503_b23e_255d,
    0x3ffa_9e6b_5579_fdbf,
    0x3ffa_e89f_995a_d3ad,
    0x3ffb_33a2_b84f_15fb,
    0x3ffb_7f76_f2fb_5e47,
    0x3ffb_cc1e_904b_c1d2,
    0x3ffc_199b_dd85_529c,
    0x3ffc_67f1_2e57_d14b,
    0x3ffc_b720_dcef_9069,
    0x3ffd_072d_4a07_897c,
    0x3ffd_5818_dcfb_a487,
    0x3ffd_a9e6_03db_3285,
    0x3ffd_fc97_337b_9b5f,
    0x3ffe_502e_e78b_3ff6,
    0x3ffe_a4af_a2a4_90da,
    0x3ffe_fa1b_ee61_5a27,
    0x3fff_5076_5b6e_4540,
    0x3fff_a7c1_819e_90d8,
];

/// The relative error bound of `fast_exp` proven below, 2^-51.
pub const FAST_EXP_MAX_REL_ERROR: f64 = 1.0 / (1u64 << 51) as f64;

/// e^x, within a relative error of 2^-51 of the true value for |x| <= 700; libm's `exp`
/// outside that (and for NaN). Inline and branch-free in the domain, where glibc's `exp` is two
/// calls (an errno wrapper, then the body). A lognormal draw rounded to a whole number uses
/// `scaled_exp2_64` instead, whose exponent comes pre-scaled: this reduction is the longer
/// half of the chain of dependent operations here, and a draw waits for it.
///
/// Method: `x = k ln2/64 + r`, `e^x = 2^(k >> 6) * 2^((k & 63)/64) * e^r`, with `k` the nearest
/// integer to `x * 64/ln2`, the middle factor from `TABLE` and `e^r` from its Taylor polynomial
/// of degree 5, `1 + p(r)`, evaluated in two independent halves (Estrin's scheme) so that the
/// chain of dependent operations is short: the draw that follows waits for this one.
///
/// Error bound, with u = 2^-53 (every operation below is one IEEE double operation, rounded to
/// nearest, so its result is within a relative u of the exact result of its operands):
/// - `k`: `x * INV_LN2_64` is within 2u relative of `x * 64/ln2` (|.| < 2^16), so within
///   2^-36; `+ SHIFT` rounds it to an integer exactly (the sum is in [2^52, 2^53), where the
///   spacing is 1), and `t - SHIFT` is exact. So |x - k ln2/64| <= ln2/64 (1/2 + 2^-36), i.e.
///   |r| <= 0.0054153.
/// - `x - kf * HI` is exact: `kf * HI` is exact (above); if k = 0 it is x; otherwise
///   |x| >= 2^-8, both operands are multiples of min(ulp(x), 2^-43) >= 2^-60, and the
///   difference is below 2^-7 = 2^53 * 2^-60, so it is representable. Then `- kf * LO`:
///   |HI + LO - ln2/64| <= 2^-99 and |k LO| < 2^-29, so `r` is within
///   2^16 * 2^-99 + u 2^-29 + u |r| < 0.0055 u + 2^-81 of the exact `x - k ln2/64`: a
///   relative error of e^r of at most 0.006 u.
/// - Taylor remainder: |r|^6 / 6! * e^|r| < 2^-54.6 < 0.33 u (relative to e^r >= 0.9945).
/// - Evaluating p: the halves `a = C2 + r * C3` (about 1/2) and `b = C4 + r * C5` (about
///   1/24) are each within 2u relative; `a + r2 * b` (r2 = r * r < 2.94e-5, within u) is
///   within 3u; times `r2`, within 5u of a value below 1.5e-5; the final `r +` within u of
///   |p| < 0.00545. So p is within 1.5e-5 * 5u + 0.00545 u < 0.0056 u of p(r), relative to
///   1 + p >= 0.9945.
/// - `TABLE[j]` is within u relative of 2^(j/64); adding m to its exponent is exact (the result
///   stays normal: m is in [-1010, 1009]), so `scaled` is exact times 2^m.
/// - `scaled * p`: within u |p| < 0.0055 u of the result; `scaled + scaled * p`: within u.
///
/// Sum (products of the (1 + e) factors, second order negligible): u (table) + u (last sum) +
/// 0.006 u + 0.33 u + 0.0056 u + 0.0055 u < 2.35 u < 2^-51.7 <= `FAST_EXP_MAX_REL_ERROR`.
/// `fast_exp_is_within_its_bound_of_libm` checks it against libm's exp over millions of x.
#[inline(always)]
pub fn fast_exp(x: f64) -> f64 {
    // NaN fails the test too.
    let in_domain = x.abs() <= MAX_ARG;
    if !in_domain {
        return x.exp();
    }
    let t = x * INV_LN2_64 + SHIFT;
    // t is in [2^52, 2^53): its bits minus SHIFT's are k.
    let k = t.to_bits() as i64 - SHIFT.to_bits() as i64;
    let kf = t - SHIFT;
    let r = (x - kf * LN2_64_HI) - kf * LN2_64_LO;
    let r2 = r * r;
    let p = r + r2 * ((C2 + r * C3) + r2 * (C4 + r * C5));
    // 2^(k >> 6) * TABLE[k & 63], by adding k >> 6 to the entry's exponent field.
    let scaled = f64::from_bits(TABLE[(k & 63) as usize].wrapping_add(((k >> 6) as u64) << 52));
    scaled + scaled * p
}

/// The largest |t| `scaled_exp2_64` takes: 2^(t/64) is then within 2^-24..2^24.
pub const EXP2_64_MAX_ARG: f64 = 1536.0;
/// (ln 2 / 64)^n / n!, each rounded to nearest (generated with Python's `decimal` at 60
/// digits, as `TABLE`).
const D1: f64 = f64::from_bits(0x3f86_2e42_fefa_39ef);
const D2: f64 = f64::from_bits(0x3f0e_bfbd_ff82_c58f);
const D3: f64 = f64::from_bits(0x3e8c_6b08_d704_a0c0);
const D4: f64 = f64::from_bits(0x3e03_b2ab_6fba_4e77);
const D5: f64 = f64::from_bits(0x3d75_d87f_e78a_6731);

/// `scale * 2^(t/64)` for |t| <= `EXP2_64_MAX_ARG` and a normal `scale`, within 3.4u relative
/// (u = 2^-53) of `scale * 2^(t/64)` computed exactly, when the result is normal. For a draw
/// whose exponent is already in units of ln2/64 (a lognormal's sigma scaled once): `fast_exp`
/// without its reduction, which is most of its chain of dependent operations.
///
/// `t = k + r` with `k` the nearest integer (the `SHIFT` trick, exact as in `fast_exp`) and
/// `r = t - k` exact (Sterbenz: for k != 0, t is within 1/2 of k, so between k/2 and 2k), so
/// |r| <= 1/2 and e^(r ln2/64) is the Taylor polynomial of degree 5 in `r * ln2/64` (|.| <=
/// 0.00542), with `D1`..`D5` its coefficients: remainder < 0.33u; `D1`'s rounding and the
/// evaluation (as in `fast_exp`) < 0.02u. `TABLE[j]`, `scale * TABLE[j]` (exact times 2^m, m in
/// [-24, 24], if normal), `ms * q` and the final sum each round within u, 0.0055u, u and u:
/// 3 u + 0.36 u < 3.4u.
#[inline(always)]
pub fn scaled_exp2_64(t: f64, scale: f64) -> f64 {
    let shifted = t + SHIFT;
    let k = shifted.to_bits() as i64 - SHIFT.to_bits() as i64;
    let r = t - (shifted - SHIFT);
    let r2 = r * r;
    let q = r * D1 + r2 * ((D2 + r * D3) + r2 * (D4 + r * D5));
    let table = f64::from_bits(TABLE[(k & 63) as usize].wrapping_add(((k >> 6) as u64) << 52));
    let ms = scale * table;
    ms + ms * q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngExt;
    use std::f64::consts::LN_2;

    const U: f64 = 1.0 / (1u64 << 53) as f64;

    fn ulps_apart(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn the_table_is_two_to_the_j_over_64() {
        for (j, bits) in TABLE.iter().enumerate() {
            let reference = (j as f64 / 64.0).exp2();
            assert!(ulps_apart(f64::from_bits(*bits), reference) <= 1, "entry {j}");
        }
        assert_eq!(f64::from_bits(TABLE[32]), std::f64::consts::SQRT_2);
    }

    #[test]
    fn ln2_over_64_splits_exactly() {
        // HI has 37 significant bits, so k * HI is exact for |k| < 2^16.
        assert_eq!(LN2_64_HI.to_bits() & 0xffff, 0);
        assert_eq!(LN2_64_HI + LN2_64_LO, std::f64::consts::LN_2 / 64.0);
        let k_max = (MAX_ARG * INV_LN2_64).ceil();
        assert!(k_max < 65_536.0);
    }

    /// Our bound (2^-51) plus libm's (within 1 ulp, at most 2u relative), plus slack for the
    /// second-order terms.
    fn check(x: f64, worst: &mut f64) {
        let (ours, libm) = (fast_exp(x), x.exp());
        let rel = ((ours - libm) / libm).abs();
        assert!(
            rel <= FAST_EXP_MAX_REL_ERROR + 2.0 * U + U / 64.0,
            "x = {x:e}: {ours:e} vs {libm:e}"
        );
        *worst = worst.max(rel);
    }

    #[test]
    fn fast_exp_is_within_its_bound_of_libm() {
        let mut rng = crate::rng::stream(16, &[1]);
        let mut worst = 0.0f64;
        for _ in 0..2_000_000 {
            check(rng.random_range(-MAX_ARG..MAX_ARG), &mut worst);
            // Where lognormal draws live: sigma * z with sigma up to ~2 and |z| up to ~6.
            check(rng.random_range(-12.0..12.0), &mut worst);
        }
        // Next to every boundary between two k in the draws' range, and the far ones.
        let step = std::f64::consts::LN_2 / 64.0;
        for k in (-1_200..1_200).chain(-64_633..-64_500).chain(64_500..64_633) {
            let mid = (k as f64 + 0.5) * step;
            let mut x = mid;
            for _ in 0..64 {
                x = x.next_up();
            }
            for _ in 0..128 {
                check(x, &mut worst);
                x = x.next_down();
            }
        }
        let edges = [0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e-17, -1e-17, 1.0, -1.0, 700.0, -700.0];
        for x in edges {
            check(x, &mut worst);
        }
        assert_eq!(fast_exp(0.0), 1.0);
        assert!(worst < 4.0 * U, "worst relative difference {worst:e}");
    }

    #[test]
    fn scaled_exp2_64_is_within_its_bound_of_libm() {
        let mut rng = crate::rng::stream(16, &[2]);
        let mut worst = 0.0f64;
        let mut check = |t: f64, scale: f64| {
            let libm = scale * (t * (LN_2 / 64.0)).exp();
            let rel = ((scaled_exp2_64(t, scale) - libm) / libm).abs();
            // Ours (3.4u), libm's exp (2u), its product (u), and `t * LN_2 / 64` (2u of an
            // exponent below 16.7: 33.3u).
            assert!(rel <= 40.0 * U, "t = {t:e}: {rel:e}");
            worst = worst.max(rel);
        };
        for _ in 0..2_000_000 {
            check(rng.random_range(-EXP2_64_MAX_ARG..EXP2_64_MAX_ARG), rng.random_range(0.5..1e7));
        }
        for k in -1_536..1_536 {
            for d in [-0.5, -0.499_999_999, 0.0, 0.499_999_999, 0.5] {
                check(f64::from(k) + d, 1.0);
            }
        }
        assert_eq!(scaled_exp2_64(0.0, 3.0), 3.0);
        assert_eq!(scaled_exp2_64(64.0, 1.0), 2.0);
        assert_eq!(scaled_exp2_64(-1_536.0, 1.0), 2f64.powi(-24));
    }

    #[test]
    fn outside_its_domain_fast_exp_is_libm() {
        for x in
            [700.5, -700.5, 709.7, 710.0, -745.0, -1e6, 1e300, f64::INFINITY, f64::NEG_INFINITY]
        {
            assert_eq!(fast_exp(x).to_bits(), x.exp().to_bits(), "{x}");
        }
        assert!(fast_exp(f64::NAN).is_nan());
    }
}
