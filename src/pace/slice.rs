//! Exact slices: 1e9 / rate nanoseconds as a 64.64 fixed-point number.
//!
//! A slice is never rounded to a whole nanosecond. It is kept as `hi + lo / 2^64` ns,
//! computed by exact long division from the rate's binary representation, so after N
//! grants the schedule has moved `N * 1e9 / rate` ns to within one nanosecond for any
//! N reachable in centuries (the per-grant error is below 2^-64 ns).

/// A slice in 64.64 fixed point nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Slice {
    /// Whole nanoseconds.
    pub(crate) hi: u64,
    /// Fraction of a nanosecond, in units of 2^-64 ns.
    pub(crate) lo: u64,
}

impl Slice {
    /// The slice of `rate` ops per second (rate in 1e-6..=1e9).
    pub(crate) fn of_rate(rate: f64) -> Self {
        debug_assert!(rate > 0.0 && rate.is_finite());
        // rate = mant * 2^exp exactly.
        let bits = rate.to_bits();
        let raw_exp = ((bits >> 52) & 0x7ff) as i32;
        let (mant, exp) = if raw_exp == 0 {
            (bits & ((1 << 52) - 1), -1074)
        } else {
            ((bits & ((1 << 52) - 1)) | (1 << 52), raw_exp - 1075)
        };
        // slice * 2^64 = 1e9 * 2^(64 - exp) / mant; shift >= 0 for every valid rate.
        let shift = 64 - exp;
        let q = if shift >= 0 {
            div_shifted(1_000_000_000, shift as u32, mant)
        } else {
            (1_000_000_000u128 >> (-shift) as u32) / mant as u128
        };
        Self {
            hi: (q >> 64) as u64,
            lo: q as u64,
        }
    }

    /// The slice as a float, for reports.
    pub(crate) fn as_f64(self) -> f64 {
        self.hi as f64 + self.lo as f64 / 18_446_744_073_709_551_616.0
    }

    /// `frac + k * slice` split into whole nanoseconds and the new fraction.
    #[inline]
    pub(crate) fn advance(self, frac: u64, k: u64) -> (u64, u64) {
        let low = k as u128 * self.lo as u128 + frac as u128;
        let whole = k as u128 * self.hi as u128 + (low >> 64);
        (u64::try_from(whole).unwrap_or(u64::MAX), low as u64)
    }

    /// Whole nanoseconds of `k` slices starting from fraction `frac`.
    #[inline]
    pub(crate) fn whole(self, frac: u64, k: u64) -> u64 {
        self.advance(frac, k).0
    }
}

/// floor(num * 2^shift / den) for den < 2^53, when the result fits in 128 bits.
fn div_shifted(num: u64, shift: u32, den: u64) -> u128 {
    let den = den as u128;
    let mut q = num as u128 / den;
    let mut r = num as u128 % den;
    let mut left = shift;
    while left > 0 {
        let step = left.min(64);
        q = (q << step) | ((r << step) / den);
        r = (r << step) % den;
        left -= step;
    }
    q
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn round_rates_have_round_slices() {
        assert_eq!(Slice::of_rate(1e9), Slice { hi: 1, lo: 0 });
        assert_eq!(
            Slice::of_rate(1000.0),
            Slice {
                hi: 1_000_000,
                lo: 0
            }
        );
        assert_eq!(
            Slice::of_rate(1.0),
            Slice {
                hi: 1_000_000_000,
                lo: 0
            }
        );
        assert_eq!(Slice::of_rate(4e8), Slice { hi: 2, lo: 1 << 63 });
    }

    #[test]
    fn a_third_is_a_third() {
        let s = Slice::of_rate(3e8); // 3.333... ns
        assert_eq!(s.hi, 3);
        assert_eq!(s.lo, u64::MAX / 3); // 0x5555...; exact floor
        // three billion slices are 1e10 ns minus less than one
        let (whole, _) = s.advance(0, 3_000_000_000);
        assert_eq!(whole, 9_999_999_999);
    }

    #[test]
    fn slowest_rate_fits() {
        let s = Slice::of_rate(1e-6);
        // 1e15 ns, up to the f64 representation of 1e-6.
        let exact = 1e9 / 1e-6;
        assert!((s.as_f64() - exact).abs() / exact < 1e-15);
        let (w, _) = s.advance(0, 30);
        assert!(w > 29_000_000_000_000_000);
    }

    #[test]
    fn advance_carries_fraction() {
        let s = Slice { hi: 0, lo: 1 << 63 }; // half a nanosecond
        assert_eq!(s.advance(0, 3), (1, 1 << 63));
        assert_eq!(s.advance(1 << 63, 1), (1, 0));
    }
}
