//! Time inside paceline is plain nanoseconds: a `u64` counted from an origin.
//!
//! [`Duration`] and [`Instant`](std::time::Instant) appear only at the edges of the
//! public API. Inside, every reading, slot and deadline is a [`Nanos`], which keeps
//! the hot path free of conversions and makes arithmetic exact.

use std::time::Duration;

/// Nanoseconds since an origin (a limiter's or a clock's), or a span of nanoseconds.
///
/// A `u64` holds 584 years of nanoseconds, so a schedule never overflows in practice.
///
/// ```
/// use paceline::Nanos;
/// let slot: Nanos = 1_500_000; // 1.5 ms after the origin
/// assert_eq!(paceline::nanos::to_duration(slot).as_micros(), 1500);
/// ```
pub type Nanos = u64;

/// Nanoseconds in one second.
///
/// ```
/// assert_eq!(paceline::nanos::NANOS_PER_SEC, 1_000_000_000);
/// ```
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Converts a [`Duration`] to nanoseconds, saturating at `u64::MAX` (584 years).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(paceline::nanos::from_duration(Duration::from_millis(3)), 3_000_000);
/// assert_eq!(paceline::nanos::from_duration(Duration::MAX), u64::MAX);
/// ```
pub fn from_duration(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Converts nanoseconds to a [`Duration`].
///
/// ```
/// assert_eq!(paceline::nanos::to_duration(2_000).as_micros(), 2);
/// ```
pub fn to_duration(n: Nanos) -> Duration {
    Duration::from_nanos(n)
}
