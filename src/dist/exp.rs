//! `scaled_exp2_64`: `scale * 2^(t/64)` inline, in baseline x86-64 arithmetic (no call, no
//! FMA), within 3.4 ulp, for the lognormal draws rounded to a whole number (`dist::fast_round`
//! says why such a draw may use it in place of libm's `exp`).

/// 1.5 * 2^52: adding it to a number below 2^51 in magnitude rounds that number to the
/// nearest integer (ties to even), which lands in the low bits of the sum.
const SHIFT: f64 = 6_755_399_441_055_744.0;

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
/// whose exponent is already in units of ln2/64 (a lognormal's sigma scaled once), so that no
/// reduction by ln 2 sits in the chain of dependent operations a draw waits for.
///
/// Error bound (every operation below is one IEEE double operation, rounded to nearest):
/// - `t + SHIFT` is in [2^52, 2^53), where the spacing is 1, so it rounds `t` to the nearest
///   integer `k` exactly, and `shifted - SHIFT` is exact; `r = t - k` is exact (Sterbenz: for
///   k != 0, t is within 1/2 of k, so between k/2 and 2k). So |r| <= 1/2.
/// - 2^(r/64) = e^s with s = r ln2/64, |s| <= 0.00542: the Taylor polynomial of degree 5 in s,
///   with `D1`..`D5` its coefficients, leaves a remainder below 0.33u (relative to e^s >=
///   0.9946). `q` is evaluated in two independent halves (Estrin's scheme, a short chain):
///   `r * D1` is within 2u of s (|s| <= 0.00542, so 0.011u of the result); the halves
///   `D2 + r * D3` and `D4 + r * D5` are each within 2u, their combination within 3u, times
///   `r2` (below 1.5e-5 of the result) within 5u, and the final sum within u of |q| < 0.00545:
///   under 0.02u in all.
/// - `TABLE[j]` is within u relative of 2^(j/64) (checked entry by entry); adding `k >> 6` to
///   its exponent is exact (m in [-24, 24]); `scale * table` (normal) rounds within u,
///   `ms * q` within u |q| < 0.0055u, and the final sum within u.
///
/// Sum: 3 u + 0.33 u + 0.02 u + 0.0055 u < 3.4u. `scaled_exp2_64_is_within_its_bound_of_libm`
/// checks it against libm's exp over millions of arguments and every reduction boundary.
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
}
