//! The pacer: a nanosecond time-slice scheduler.
//!
//! See [`RateLimiter`] for the API and `docs/pacing.md` for the model, the timelines of
//! each strictness regime and the memory-ordering ground rules.

mod anchor;
mod arrivals;
mod builder;
mod control;
mod epoch;
mod forfeit;
mod future;
#[cfg(all(test, not(loom)))]
mod future_tests;
mod grant;
mod limiter;
#[cfg(all(test, loom))]
mod loom_tests;
mod park;
mod reserve;
mod schedule;
mod slice;
mod spec;
#[cfg(all(test, not(loom)))]
mod tests;
mod wait;
mod word;

pub use arrivals::Arrivals;
/// Each draw of a Poisson stream, for the verdict's thread-scope drawn rate.
pub(crate) use arrivals::unit_gap;
pub use builder::RateLimiterBuilder;
pub use future::Acquire;
pub use grant::{Grant, Refused};
pub use limiter::{DEFAULT_FAST_PATH_LIMIT, LimiterStats, RateLimiter};
pub use spec::{DEFAULT_STRICTNESS, MAX_RATE, MIN_RATE, Mode, RateSpec, Scope, Verb};
