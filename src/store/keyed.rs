//! Seed 004's keyed limiter on a shared Redis: the request store is Redis, the
//! configuration store is this process's memory, and each decision is one script.
//!
//! Ground rules: the limiter's state is on the server; this side holds its connections
//! (`conn.rs`) and one counter, the calls answered by the fail mode: `Relaxed`, a
//! statistic that publishes nothing, a std atomic even under `--cfg loom`
//! (`sync::threads`): no model covers the store, whose concurrency is the server's.
//!
//! This file holds the configuration: fail modes, algorithms, a limit's shape in
//! the store's units, the builder and the per-key limits. The calls that ask the
//! store (one script, or a pipeline of them) are in `keyed_calls.rs`.

use super::conn::Pool;
use super::error::StoreError;
use super::gcra;
use super::window::{self, MAX_LIMIT_TIMES_WINDOW};
use crate::limiters::Limit;
use crate::sync::threads::{AtomicU64, Ordering};
use parking_lot::RwLock;
use redis::Script;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::time::Duration;

#[path = "keyed_calls.rs"]
mod calls;

pub use calls::RedisKey;

/// What a [`RedisKeyedLimiter`] answers when the store cannot be reached.
///
/// ```
/// use paceline::FailMode;
/// assert_eq!(FailMode::default(), FailMode::Closed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FailMode {
    /// Refuse every request until the store answers again: nothing passes that the
    /// store did not count. The refusal's `earliest` is the local clock plus the retry
    /// delay.
    #[default]
    Closed,
    /// Admit every request until the store answers again: the limit is not enforced
    /// meanwhile, and [`RedisKeyedLimiter::store_errors`] counts how often that happened.
    Open,
}

/// How a [`RedisKeyedLimiter`] decides, per key.
///
/// ```
/// use paceline::Algorithm;
/// assert_eq!(Algorithm::default(), Algorithm::SlidingWindow);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// Seed 004's question, "at most `permits` per `window`", answered by an approximate
    /// sliding window: two fixed windows, the previous one weighted by how much of it
    /// the sliding window still covers. At most `permits` in any aligned window, at most
    /// `2 × permits` in any window of its width. The limit's `burst` is not used.
    #[default]
    SlidingWindow,
    /// GCRA: requests paid off at `permits / window`, with up to `burst` permits at
    /// once. At most `burst + t × permits / window` in any interval of length `t`: no
    /// window edge lets twice the limit through. One time (not two counts) per key.
    Gcra,
}

/// One key's limit in the store's units: the window in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    window_us: u64,
    limit: u64,
    burst: u64,
}

impl Shape {
    fn of(limit: Limit, key: Option<&str>, algorithm: Algorithm) -> Result<Self, StoreError> {
        let bad = |reason: String| StoreError::BadLimit {
            key: key.map(str::to_string),
            reason,
        };
        let ns = limit.window_nanos();
        if ns % 1000 != 0 {
            return Err(bad(format!(
                "its window of {ns} ns is not a whole number of microseconds (the resolution \
                 of the server's TIME); give a window in whole microseconds"
            )));
        }
        let window_us = ns / 1000;
        let permits = u64::from(limit.permits());
        if permits
            .checked_mul(window_us)
            .is_none_or(|p| p > MAX_LIMIT_TIMES_WINDOW)
        {
            return Err(bad(format!(
                "{permits} permits × {window_us} µs exceeds 2^51; give fewer permits over a \
                 shorter window, such as a tenth of both"
            )));
        }
        let burst = u64::from(limit.burst());
        if algorithm == Algorithm::Gcra
            && burst
                .checked_mul(window_us)
                .is_none_or(|p| p > MAX_LIMIT_TIMES_WINDOW)
        {
            return Err(bad(format!(
                "a burst of {burst} × {window_us} µs exceeds 2^51; give a smaller burst"
            )));
        }
        Ok(Self {
            window_us,
            limit: permits,
            burst,
        })
    }

    /// The script's arguments after the key, for `n` permits.
    fn args(self, algorithm: Algorithm, n: u32) -> Vec<u64> {
        match algorithm {
            Algorithm::SlidingWindow => vec![self.window_us, self.limit, u64::from(n)],
            Algorithm::Gcra => vec![self.window_us, self.limit, self.burst, u64::from(n)],
        }
    }
}

/// Builds a [`RedisKeyedLimiter`]: where the store is, the key prefix, what to do when
/// the store cannot be reached, timeouts and connections.
///
/// ```no_run
/// use paceline::{FailMode, Limit, RedisKeyedLimiter};
/// use std::num::NonZeroUsize;
/// use std::time::Duration;
/// let limiter = RedisKeyedLimiter::builder("redis://127.0.0.1:6379/0", Limit::per_second(100)?)
///     .prefix("api")
///     .fail_mode(FailMode::Open)
///     .timeout(Duration::from_millis(200))
///     .retry_after(Duration::from_millis(50))
///     .connections(NonZeroUsize::new(4).unwrap())
///     .build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct RedisKeyedLimiterBuilder {
    url: String,
    default: Limit,
    prefix: String,
    fail: FailMode,
    algorithm: Algorithm,
    timeout: Duration,
    retry_after: Duration,
    connections: NonZeroUsize,
}

impl RedisKeyedLimiterBuilder {
    /// How each key's requests are decided (see [`Algorithm`]). Processes that share
    /// keys must use the same one.
    ///
    /// By default, [`Algorithm::SlidingWindow`] (seed 004's "N per window").
    pub fn algorithm(self, algorithm: Algorithm) -> Self {
        Self { algorithm, ..self }
    }

    /// The prefix of every key the limiter writes: key `K` is stored at `{PREFIX:K}`.
    /// The braces make the whole name a hash tag, so a Redis Cluster maps each key to
    /// one slot and accepts the script.
    ///
    /// By default, `paceline`.
    pub fn prefix(self, prefix: &str) -> Self {
        Self {
            prefix: prefix.to_string(),
            ..self
        }
    }

    /// What to answer when the store cannot be reached.
    ///
    /// By default, [`FailMode::Closed`]: refuse.
    pub fn fail_mode(self, fail: FailMode) -> Self {
        Self { fail, ..self }
    }

    /// How long a connection attempt, a write or a reply may take before the call
    /// fails with [`StoreError::Unreachable`] or [`StoreError::Lost`].
    ///
    /// By default, 1 second.
    pub fn timeout(self, timeout: Duration) -> Self {
        Self { timeout, ..self }
    }

    /// After a failed connection attempt, how long each connection waits before trying
    /// again (calls meanwhile fail at once, so a store that is down costs no timeout per
    /// call); also the retry time a fail-closed refusal suggests.
    ///
    /// By default, 100 ms.
    pub fn retry_after(self, retry_after: Duration) -> Self {
        Self {
            retry_after,
            ..self
        }
    }

    /// How many connections calls are spread over (round robin); each carries one call
    /// at a time.
    ///
    /// By default, 1.
    pub fn connections(self, connections: NonZeroUsize) -> Self {
        Self {
            connections,
            ..self
        }
    }

    /// Checks the URL and the default limit, connects once and loads the script.
    ///
    /// Fails with [`StoreError::BadUrl`], [`StoreError::BadLimit`], or
    /// [`StoreError::Unreachable`] when the server does not answer.
    ///
    /// ```
    /// use paceline::{Limit, RedisKeyedLimiter, StoreError};
    /// let err = RedisKeyedLimiter::builder("rediss://h:1", Limit::per_second(1)?).build().unwrap_err();
    /// assert!(matches!(err, StoreError::BadUrl { .. }), "{err}");
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn build(self) -> Result<RedisKeyedLimiter, StoreError> {
        let pool = Pool::open(
            &self.url,
            self.connections.get(),
            self.timeout,
            self.retry_after,
        )?;
        let default = Shape::of(self.default, None, self.algorithm)?;
        let limiter = RedisKeyedLimiter {
            pool,
            prefix: self.prefix,
            default_limit: self.default,
            default,
            configs: RwLock::new(HashMap::new()),
            fail: self.fail,
            algorithm: self.algorithm,
            retry_after: self.retry_after,
            errors: AtomicU64::new(0),
            script: Script::new(match self.algorithm {
                Algorithm::SlidingWindow => window::SCRIPT,
                Algorithm::Gcra => gcra::SCRIPT,
            }),
        };
        limiter.pool.warm(&limiter.script)?;
        Ok(limiter)
    }
}

/// Seed 004's per-key limiter with Redis as the request store: several processes (or
/// machines) that share one Redis share each key's limit.
///
/// Each key gets an approximate sliding window (two fixed windows, the previous one
/// weighted by how much of it the sliding window still covers; see `docs/scale-out.md`),
/// or with [`Algorithm::Gcra`] a GCRA, decided by one atomic Lua script on the server's
/// `TIME`: no client clock is trusted, and no two processes can both take the last
/// permit. Per key, the sliding window admits at most `permits` in any aligned window
/// and at most `2 × permits` in any window of its width; GCRA at most `burst + t ×
/// permits / window` in any interval of length `t`.
///
/// - **Configuration**: a default [`Limit`] and per-key limits
///   ([`set_config`](Self::set_config)) held in this process, sent with each call
///   (every process sharing the store should configure alike). A limit's `burst` is
///   used by GCRA only.
/// - **Memory**: each key is one small hash at `{prefix:key}` with a `PEXPIRE` set by
///   the script to the last moment its state matters (the end of the window after the
///   current one; for GCRA, when the burst is paid off): idle keys vanish.
/// - **Batches**: [`check_many`](Self::check_many) sends many decisions in one round
///   trip (a pipeline of script calls; each decision is still atomic on its own).
/// - **Faults**: when the store cannot be reached, [`try_acquire`](Self::try_acquire)
///   refuses (fail closed) or, with [`FailMode::Open`], admits; [`check`](Self::check)
///   returns the [`StoreError`]. A lost connection is re-made on the next call.
///
/// The [`Limiter`](crate::Limiter) trait is implemented for one key at a time:
/// [`key`](Self::key).
///
/// ```no_run
/// use paceline::{Limit, Limiter, RedisKeyedLimiter};
/// use std::time::Duration;
/// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(2)?)?;
/// limiter.set_config("user:241531", Limit::new(5, Duration::from_secs(1))?)?;
/// assert!(limiter.try_acquire("user:241531", 5).is_admitted());
/// assert!(limiter.key("user:7").try_acquire(2).is_admitted());
/// assert!(!limiter.key("user:7").try_acquire(1).is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RedisKeyedLimiter {
    pool: Pool,
    prefix: String,
    default_limit: Limit,
    default: Shape,
    configs: RwLock<HashMap<String, (Limit, Shape)>>,
    fail: FailMode,
    algorithm: Algorithm,
    retry_after: Duration,
    /// Calls answered by the fail mode; a statistic (Relaxed).
    errors: AtomicU64,
    script: Script,
}

impl std::fmt::Debug for RedisKeyedLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisKeyedLimiter")
            .field("url", &self.pool.url())
            .field("prefix", &self.prefix)
            .field("default", &self.default_limit)
            .field("fail", &self.fail)
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl RedisKeyedLimiter {
    /// A builder for a limiter on the Redis at `url` (`redis://HOST:PORT/DB`), with
    /// `default` for every key not configured otherwise.
    ///
    /// ```
    /// use paceline::{Limit, RedisKeyedLimiter};
    /// let b = RedisKeyedLimiter::builder("redis://127.0.0.1:6379", Limit::per_second(10)?);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn builder(url: &str, default: Limit) -> RedisKeyedLimiterBuilder {
        RedisKeyedLimiterBuilder {
            url: url.to_string(),
            default,
            prefix: "paceline".to_string(),
            fail: FailMode::Closed,
            algorithm: Algorithm::SlidingWindow,
            timeout: Duration::from_secs(1),
            retry_after: Duration::from_millis(100),
            connections: NonZeroUsize::MIN,
        }
    }

    /// A limiter on the Redis at `url` with `default` for every key and the builder's
    /// other defaults; connects once to check the server is there.
    ///
    /// ```no_run
    /// use paceline::{Limit, RedisKeyedLimiter};
    /// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(10)?)?;
    /// assert!(limiter.try_acquire("ip:10.0.0.1", 1).is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connect(url: &str, default: Limit) -> Result<Self, StoreError> {
        Self::builder(url, default).build()
    }

    /// Sets `key`'s own limit; it applies from the key's next request. A key whose
    /// window width changes starts counting afresh.
    ///
    /// Fails with [`StoreError::BadLimit`] for a limit the store cannot count exactly.
    ///
    /// ```no_run
    /// use paceline::{Limit, RedisKeyedLimiter};
    /// use std::time::Duration;
    /// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(10)?)?;
    /// limiter.set_config("tenant:big", Limit::new(1000, Duration::from_secs(1))?)?;
    /// assert_eq!(limiter.config("tenant:big").permits(), 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_config(&self, key: &str, limit: Limit) -> Result<(), StoreError> {
        let shape = Shape::of(limit, Some(key), self.algorithm)?;
        self.configs.write().insert(key.to_string(), (limit, shape));
        Ok(())
    }

    /// Removes `key`'s own limit: the default applies again.
    ///
    /// ```no_run
    /// # use paceline::{Limit, RedisKeyedLimiter};
    /// # let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(10)?)?;
    /// limiter.remove_config("tenant:big");
    /// assert_eq!(limiter.config("tenant:big").permits(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove_config(&self, key: &str) {
        self.configs.write().remove(key);
    }

    /// The limit that applies to `key`: its own, or the default.
    ///
    /// ```no_run
    /// # use paceline::{Limit, RedisKeyedLimiter};
    /// # let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(10)?)?;
    /// assert_eq!(limiter.config("anyone").permits(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(&self, key: &str) -> Limit {
        self.configs
            .read()
            .get(key)
            .map_or(self.default_limit, |&(l, _)| l)
    }

    /// The Redis key that holds `key`'s counts: `{prefix:key}`.
    ///
    /// ```no_run
    /// # use paceline::{Limit, RedisKeyedLimiter};
    /// # let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(10)?)?;
    /// assert_eq!(limiter.store_key("user:1"), "{paceline:user:1}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn store_key(&self, key: &str) -> String {
        format!("{{{}:{key}}}", self.prefix)
    }

    /// How many calls of [`try_acquire`](Self::try_acquire),
    /// [`try_acquire_many`](Self::try_acquire_many) and [`key`](Self::key) were answered by the fail mode
    /// because the store could not be reached.
    ///
    /// ```no_run
    /// # use paceline::{Limit, RedisKeyedLimiter};
    /// # let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(10)?)?;
    /// assert_eq!(limiter.store_errors(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn store_errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn limits_the_store_cannot_count_exactly_are_rejected_with_the_key() {
        let sub_us = Limit::new(1, Duration::from_nanos(1500)).unwrap();
        let e = Shape::of(sub_us, Some("k"), Algorithm::SlidingWindow).unwrap_err();
        assert!(e.to_string().starts_with("the limit for key `k`"), "{e}");
        assert!(e.to_string().contains("whole microseconds"), "{e}");
        let huge = Limit::new(u32::MAX, Duration::from_secs(3600)).unwrap();
        let e = Shape::of(huge, None, Algorithm::SlidingWindow).unwrap_err();
        assert!(e.to_string().contains("exceeds 2^51"), "{e}");
        let ok = Limit::new(7, Duration::from_millis(250)).unwrap();
        assert_eq!(
            Shape::of(ok, None, Algorithm::Gcra).unwrap(),
            Shape {
                window_us: 250_000,
                limit: 7,
                burst: 7
            }
        );
        // a burst only GCRA uses is only checked for GCRA
        let wide = Limit::new(1, Duration::from_secs(3600))
            .unwrap()
            .with_burst(u32::MAX)
            .unwrap();
        assert!(Shape::of(wide, None, Algorithm::SlidingWindow).is_ok());
        let e = Shape::of(wide, None, Algorithm::Gcra).unwrap_err();
        assert!(e.to_string().contains("burst"), "{e}");
    }

    #[test]
    fn bad_urls_say_what_and_how_to_fix_without_connecting() {
        let limit = Limit::per_second(1).unwrap();
        for (url, says) in [
            ("127.0.0.1:6379", "must start with redis://"),
            ("http://127.0.0.1:6379", "must start with redis://"),
            ("rediss://u:secret@h:1", "TLS"),
            ("redis://h:notaport", ""),
        ] {
            let e = RedisKeyedLimiter::connect(url, limit).unwrap_err();
            let s = e.to_string();
            assert!(matches!(e, StoreError::BadUrl { .. }), "{url}: {s}");
            assert!(s.contains(says), "{url}: {s}");
            assert!(s.contains("such as redis://127.0.0.1:6379/0"), "{s}");
            assert!(!s.contains("secret"), "{s}");
        }
    }
}
