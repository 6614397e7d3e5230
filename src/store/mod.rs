//! Limiters whose state lives in a shared store, so that several processes (or
//! machines) enforce one limit together: seed 004's keyed limiter on Redis.
//!
//! This layer sits above `limiters` (it implements their [`Limiter`](crate::Limiter)
//! trait) and below `engine`; it is built with the `redis` cargo feature (on by
//! default). The pacer and the in-process limiters never depend on it.
//!
//! | piece | file |
//! |---|---|
//! | the approximate sliding window as a pure function, and its Lua twin | `window.rs` |
//! | GCRA, the same way ([`Algorithm::Gcra`]) | `gcra.rs` |
//! | [`RedisKeyedLimiter`]: configuration, fail modes, the builder | `keyed.rs` |
//! | its calls: one script per decision, batches, the fail mode's answer | `keyed_calls.rs` |
//! | connections: the URL, a round-robin pool, reconnection | `conn.rs` |
//! | [`StoreVerdict`]: what the store decided, at which server time | `verdict.rs` |
//! | [`StoreError`] | `error.rs` |
//! | the shared schedule ([`Coordinate`], `coordinate=`): one rate and one cycle range across processes | `coord/` |
//!
//! Each script and its pure function decide in the same exact integer arithmetic; the
//! pure functions' properties are proptests in `window.rs` and `gcra.rs`, and
//! `tests/store_redis.rs` replays the server's decisions through independent models at
//! the server's own times.

/// The start both scripts share: `div`, an exact integer division (Lua numbers are
/// doubles: it corrects a quotient rounded up or down by one), and `now`, the
/// server's `TIME` in microseconds.
macro_rules! lua_prelude {
    () => {
        r"
local function div(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
"
    };
}

mod conn;
pub(crate) mod coord;
mod error;
mod gcra;
mod keyed;
mod verdict;
mod window;

pub use coord::{Coordinate, DEFAULT_MIN_MEMBERS_TIMEOUT};
pub use error::StoreError;
pub use keyed::{Algorithm, FailMode, RedisKey, RedisKeyedLimiter, RedisKeyedLimiterBuilder};
pub use verdict::StoreVerdict;
