//! The stable 64-bit hash and the deterministic math every binding builds on.
//!
//! Everything here uses only integer operations and the IEEE-754 basic operations
//! (+, -, ×, ÷, √), which are correctly rounded on every conforming machine, so
//! the same cycle gives the same bits everywhere. Logarithms and exponentials are
//! computed here rather than by the platform's libm, whose last bit may differ
//! between systems.

/// The splitmix64 increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Sebastiano Vigna's splitmix64 finaliser: a bijection on `u64` with full
/// avalanche. `mix64(x)` is `Hash()` of cycle `x`.
#[inline]
pub(crate) fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key that selects stream `seed`: 0 for seed 0 (so `Hash(0)` is `Hash()`),
/// otherwise `mix64(seed)`.
pub(crate) fn seed_key(seed: u64) -> u64 {
    if seed == 0 { 0 } else { mix64(seed) }
}

/// The hash of `x` in the stream keyed by `key`.
#[inline]
pub(crate) fn hash_keyed(x: u64, key: u64) -> u64 {
    mix64(x ^ key)
}

/// A uniform double in [0, 1) from the top 53 bits of `h`.
#[inline]
pub(crate) fn unit(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform double in (0, 1), never 0 or 1, from the top 53 bits of `h`.
#[inline]
pub(crate) fn open_unit(h: u64) -> f64 {
    ((h >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
const LN2: f64 = std::f64::consts::LN_2;

/// Natural logarithm of a positive finite `x`, by the atanh series; within a few
/// ulps, and the same bits on every machine.
pub(crate) fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    if x < f64::MIN_POSITIVE {
        // Subnormal: scale into the normal range first.
        return ln(x * (1u64 << 54) as f64) - 54.0 * LN2;
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    // ln(m) = 2 atanh(f), f = (m - 1) / (m + 1), |f| <= 0.1716, f² <= 0.0295.
    let f = (m - 1.0) / (m + 1.0);
    let f2 = f * f;
    let mut poly = 0.0;
    for k in (0..=12).rev() {
        poly = poly * f2 + 1.0 / (2 * k + 1) as f64;
    }
    let e = e as f64;
    2.0 * f * poly + e * LN2_HI + e * LN2_LO
}

/// e^x, by range reduction to |r| <= ln 2 / 2 and a degree-16 Taylor polynomial;
/// the same bits on every machine.
pub(crate) fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.782_712_893_384 {
        return f64::INFINITY;
    }
    if x < -745.2 {
        return 0.0;
    }
    let k = (x / LN2).round();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut poly = 1.0;
    for n in (1..=16).rev() {
        poly = 1.0 + poly * r / n as f64;
    }
    let k = k as i64;
    // Scale by 2^k in two steps so that subnormal results come out right.
    let (k1, k2) = if k < -1000 { (k + 600, -600) } else { (k, 0) };
    let mut y = poly * pow2(k1);
    if k2 != 0 {
        y *= pow2(k2);
    }
    y
}

/// 2^k for -1022 <= k <= 1023.
fn pow2(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// ln(1 + x), accurate for small x (Goldberg's trick).
pub(crate) fn ln_1p(x: f64) -> f64 {
    let u = 1.0 + x;
    if u == 1.0 { x } else { ln(u) * x / (u - 1.0) }
}

/// e^x - 1, accurate for small x (Kahan's trick).
pub(crate) fn exp_m1(x: f64) -> f64 {
    let u = exp(x);
    if u == 1.0 {
        x
    } else if u - 1.0 == -1.0 {
        -1.0
    } else {
        (u - 1.0) * x / ln(u)
    }
}

/// The standard normal quantile of `p` in (0, 1): Peter Acklam's rational
/// approximation (relative error below 1.15e-9).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.02425;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * ln(p)).sqrt())
    } else if p <= 1.0 - LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * ln(1.0 - p)).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // splitmix64 seeded with 0 yields mix64(0), mix64(GAMMA), ...: the first
        // outputs of Vigna's reference generator.
        assert_eq!(mix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix64(GAMMA), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn ln_and_exp_agree_with_std_closely() {
        for &x in &[
            1e-300, 1e-10, 0.001, 0.5, 0.9999, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300,
        ] {
            let (ours, std) = (ln(x), f64::ln(x));
            assert!(
                (ours - std).abs() <= 4.0 * f64::EPSILON * std.abs().max(1.0),
                "ln {x}"
            );
        }
        for &x in &[
            -700.0, -20.0, -1.0, -1e-9, 0.0, 1e-9, 0.5, 1.0, 3.3, 50.0, 700.0,
        ] {
            let (ours, std) = (exp(x), f64::exp(x));
            assert!(
                (ours - std).abs() <= 4.0 * f64::EPSILON * std,
                "exp {x}: {ours} {std}"
            );
        }
        for &x in &[1e-12, 1e-6, 0.01, -0.3, 2.0] {
            assert!(
                (ln_1p(x) - f64::ln_1p(x)).abs() <= 1e-15 * f64::ln_1p(x).abs(),
                "ln_1p {x}"
            );
            assert!(
                (exp_m1(x) - f64::exp_m1(x)).abs() <= 1e-15 * f64::exp_m1(x).abs(),
                "exp_m1 {x}"
            );
        }
    }

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.5)).abs() < 1e-12);
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-8);
        assert!((normal_quantile(0.001) + 3.090_232_306_167_813_5).abs() < 1e-8);
        assert!((normal_quantile(0.999_99) - 4.264_890_793_922_602).abs() < 1e-7);
    }
}
