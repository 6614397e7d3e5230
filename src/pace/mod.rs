//! The pacer: a nanosecond time-slice scheduler.
//!
//! See [`RateLimiter`] for the API and `docs/pacing.md` for the model.

mod spec;

pub use spec::{DEFAULT_STRICTNESS, MAX_RATE, MIN_RATE, Mode, RateSpec, Scope, Verb};
