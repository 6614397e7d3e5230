//! The `Zipf` binding function's sampler.

use crate::activity::bindings::hash::{exp, exp_m1, hash_keyed, ln, ln_1p, seed_key, unit};

/// Rejection-inversion Zipf sampling (Hörmann and Derflinger, 1996), constants
/// computed once at compile time.
#[derive(Debug, Clone)]
pub(super) struct Zipf {
    n: f64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    pub(super) fn new(n: u64, exponent: f64) -> Self {
        let mut z = Zipf {
            n: n as f64,
            exponent,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        exp(-self.exponent * ln(x))
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = ln(x);
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        exp(helper1(t) * x)
    }

    /// The rank, 1..=n, for input `x`; each rejection round draws a fresh hash.
    pub(super) fn sample(&self, x: u64) -> u64 {
        let mut k = 1.0;
        for round in 0..64u64 {
            let u01 = unit(hash_keyed(x, seed_key(round)));
            let u = self.h_integral_n + u01 * (self.h_integral_x1 - self.h_integral_n);
            let xx = self.h_integral_inverse(u);
            k = (xx + 0.5).floor().clamp(1.0, self.n);
            if k - xx <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                break;
            }
        }
        k as u64
    }
}

/// log(1 + x) / x, with its Taylor series near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        ln_1p(x) / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, with its Taylor series near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        exp_m1(x) / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}
