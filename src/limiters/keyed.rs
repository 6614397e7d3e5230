//! The keyed limiter of seed 004: a sliding window per key, with per-key
//! configuration, state created on demand, sharded locks, and stale keys evicted.
//! This file holds the configuration, the builder and the limiter's shape; the
//! request path (a key's window, `try_acquire`, the sweep) is in `keyed_window.rs`.

use super::LimitError;
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::{self, Nanos};
use crate::sync::ParkingMutex;
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, RandomState};
use std::num::NonZeroUsize;
use std::time::Duration;

#[path = "keyed_window.rs"]
mod window;

use window::Window;

/// The most buckets one key's window may be cut into.
const MAX_BUCKETS: u64 = 4096;

/// One key's limit: `capacity` requests per `window`, counted in buckets of
/// `granularity` (seed 004's `capacity`, `time_window_sec` and granularity).
///
/// A finer granularity slides the window more smoothly and costs 4 bytes per bucket
/// per key; `granularity = window` makes it a fixed window.
///
/// ```
/// use paceline::KeyConfig;
/// use std::time::Duration;
/// // 5 per second, in 100 ms buckets (seed 004's "user:241531").
/// let c = KeyConfig::new(5, Duration::from_secs(1), Duration::from_millis(100))?;
/// assert_eq!(c.buckets(), 10);
/// assert!(KeyConfig::new(5, Duration::from_secs(1), Duration::from_millis(300)).is_err());
/// # Ok::<(), paceline::LimitError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyConfig {
    capacity: u32,
    window: Nanos,
    granularity: Nanos,
}

impl KeyConfig {
    /// `capacity` requests per `window`, counted in buckets of `granularity`.
    ///
    /// Rejects a zero capacity ([`LimitError::ZeroPermits`]), a zero window
    /// ([`LimitError::ZeroWindow`]), and a granularity that is zero, does not divide the
    /// window, or makes more than 4096 buckets ([`LimitError::BadGranularity`]).
    ///
    /// ```
    /// use paceline::{KeyConfig, LimitError};
    /// use std::time::Duration;
    /// let min = Duration::from_secs(60);
    /// assert!(KeyConfig::new(100, min, Duration::from_secs(1)).is_ok());
    /// assert_eq!(KeyConfig::new(0, min, min), Err(LimitError::ZeroPermits));
    /// ```
    pub fn new(capacity: u32, window: Duration, granularity: Duration) -> Result<Self, LimitError> {
        if capacity == 0 {
            return Err(LimitError::ZeroPermits);
        }
        let window = nanos::from_duration(window);
        let granularity = nanos::from_duration(granularity);
        if window == 0 {
            return Err(LimitError::ZeroWindow);
        }
        if granularity == 0 || window % granularity != 0 || window / granularity > MAX_BUCKETS {
            return Err(LimitError::BadGranularity {
                granularity,
                window,
            });
        }
        Ok(Self {
            capacity,
            window,
            granularity,
        })
    }

    /// Requests allowed per window.
    ///
    /// ```
    /// use paceline::KeyConfig;
    /// use std::time::Duration;
    /// let s = Duration::from_secs(1);
    /// assert_eq!(KeyConfig::new(5, s, s)?.capacity(), 5);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The window.
    ///
    /// ```
    /// use paceline::KeyConfig;
    /// use std::time::Duration;
    /// let s = Duration::from_secs(1);
    /// assert_eq!(KeyConfig::new(5, s, s)?.window(), s);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn window(&self) -> Duration {
        nanos::to_duration(self.window)
    }

    /// The width of one bucket.
    ///
    /// ```
    /// use paceline::KeyConfig;
    /// use std::time::Duration;
    /// let s = Duration::from_secs(1);
    /// assert_eq!(KeyConfig::new(5, s, s / 4)?.granularity(), s / 4);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn granularity(&self) -> Duration {
        nanos::to_duration(self.granularity)
    }

    /// How many buckets the window is cut into.
    ///
    /// ```
    /// use paceline::KeyConfig;
    /// use std::time::Duration;
    /// let s = Duration::from_secs(1);
    /// assert_eq!(KeyConfig::new(5, s, s / 4)?.buckets(), 4);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn buckets(&self) -> usize {
        (self.window / self.granularity) as usize
    }
}

/// Builds a [`KeyedLimiter`]: the default configuration, how many keys it may track,
/// and how many shards it splits them over.
///
/// ```
/// use paceline::{KeyConfig, KeyedLimiter};
/// use std::num::NonZeroUsize;
/// use std::time::Duration;
/// let s = Duration::from_secs(1);
/// let limiter: KeyedLimiter<u64> = KeyedLimiter::builder(KeyConfig::new(10, s, s / 10)?)
///     .max_keys(NonZeroUsize::new(1_000).unwrap())
///     .shards(NonZeroUsize::new(4).unwrap())
///     .build();
/// assert!(limiter.is_empty());
/// # Ok::<(), paceline::LimitError>(())
/// ```
#[derive(Debug, Clone)]
pub struct KeyedLimiterBuilder {
    default: KeyConfig,
    max_keys: NonZeroUsize,
    shards: NonZeroUsize,
}

impl KeyedLimiterBuilder {
    /// The most keys tracked at once, across all shards; each shard holds its share,
    /// rounded up. A request for a new key in a full shard first evicts stale keys; if
    /// none is stale it is refused until one becomes stale (so memory stays bounded
    /// and no key's count is ever dropped early).
    ///
    /// By default, 100 000 keys.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter};
    /// use std::num::NonZeroUsize;
    /// let s = std::time::Duration::from_secs(1);
    /// let b = KeyedLimiter::builder(KeyConfig::new(1, s, s)?).max_keys(NonZeroUsize::MIN);
    /// let limiter: KeyedLimiter<u8> = b.build();
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn max_keys(self, max_keys: NonZeroUsize) -> Self {
        Self { max_keys, ..self }
    }

    /// How many independently locked shards the keys are spread over; more shards,
    /// less contention between threads working on different keys.
    ///
    /// By default, 16 shards.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter};
    /// use std::num::NonZeroUsize;
    /// let s = std::time::Duration::from_secs(1);
    /// let b = KeyedLimiter::builder(KeyConfig::new(1, s, s)?).shards(NonZeroUsize::MIN);
    /// let limiter: KeyedLimiter<u8> = b.build();
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn shards(self, shards: NonZeroUsize) -> Self {
        Self { shards, ..self }
    }

    /// The limiter, on the real clock.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter};
    /// let s = std::time::Duration::from_secs(1);
    /// let limiter: KeyedLimiter<String> = KeyedLimiter::builder(KeyConfig::new(1, s, s)?).build();
    /// assert!(limiter.try_acquire(&"a".to_string(), 1).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn build<K: Hash + Eq + Clone + Send>(self) -> KeyedLimiter<K> {
        self.build_with_clock(MonotonicClock::new())
    }

    /// The limiter, on `clock`.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
    /// let s = std::time::Duration::from_secs(1);
    /// let limiter: KeyedLimiter<u32, ManualClock> =
    ///     KeyedLimiter::builder(KeyConfig::new(1, s, s)?).build_with_clock(ManualClock::new());
    /// assert!(limiter.try_acquire(&7, 1).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn build_with_clock<K: Hash + Eq + Clone + Send, C: Clock>(
        self,
        clock: C,
    ) -> KeyedLimiter<K, C> {
        let shards = self.shards.get();
        let per_shard = self.max_keys.get().div_ceil(shards);
        let now = clock.now();
        KeyedLimiter {
            default: self.default,
            shards: (0..shards)
                .map(|_| {
                    CachePadded::new(ParkingMutex::new(Shard {
                        keys: HashMap::new(),
                        configs: HashMap::new(),
                        next_sweep: now.saturating_add(self.default.window),
                    }))
                })
                .collect(),
            per_shard,
            hasher: RandomState::new(),
            clock,
        }
    }
}

/// A sliding-window limiter per key (seed 004): each key gets its own window of
/// counts, created on its first request, with its own configuration or the default.
///
/// Each key's window is cut into buckets of `granularity`; a request for `n` passes if
/// the buckets still inside the window hold at most `capacity - n`. Keys are spread
/// over independently locked shards, so threads working on different keys rarely
/// meet. A key whose window holds nothing any more is *stale*: its state is exactly a
/// fresh one, so evicting it loses nothing. Each shard sweeps its stale keys once per
/// default window, and before refusing room to a new key.
///
/// **Bound**: per key, at most `capacity` admissions in any window of width
/// `window - granularity` (the buckets always cover that much), so at most
/// `2 × capacity` in a window of width `window`.
///
/// **Memory**: at most `max_keys` keys (rounded up to a multiple of the shard count),
/// each `4 × buckets` bytes plus the key and map overhead, and one `KeyConfig` per key
/// configured with [`set_config`](Self::set_config) (these are the caller's and are
/// never evicted). Under a flood of distinct keys, new keys are refused while every
/// slot holds a live key, never by forgetting a live key's count.
///
/// **Trade-offs**: a lock per shard instead of per key; a changed configuration applies
/// from the key's next request and restarts its count.
///
/// ```
/// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
/// use std::time::Duration;
/// let s = Duration::from_secs(1);
/// let clock = ManualClock::new();
/// let limiter = KeyedLimiter::builder(KeyConfig::new(2, s, s / 10)?).build_with_clock(clock.clone());
/// limiter.set_config("user:241531", KeyConfig::new(5, s, s / 10)?);
/// assert!(limiter.try_acquire(&"user:241531", 5).is_admitted());
/// assert!(limiter.try_acquire(&"user:7", 2).is_admitted());
/// assert!(!limiter.try_acquire(&"user:7", 1).is_admitted());
/// clock.advance(s);
/// assert!(limiter.try_acquire(&"user:7", 2).is_admitted());
/// # Ok::<(), paceline::LimitError>(())
/// ```
pub struct KeyedLimiter<K, C: Clock = MonotonicClock> {
    default: KeyConfig,
    shards: Box<[CachePadded<ParkingMutex<Shard<K>>>]>,
    per_shard: usize,
    hasher: RandomState,
    clock: C,
}

struct Shard<K> {
    keys: HashMap<K, Window>,
    configs: HashMap<K, KeyConfig>,
    next_sweep: Nanos,
}

impl<K: Hash + Eq + Clone + Send> KeyedLimiter<K> {
    /// A limiter on the real clock with `default` for every key not configured
    /// otherwise, and the builder's other defaults.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter};
    /// let s = std::time::Duration::from_secs(1);
    /// let limiter = KeyedLimiter::new(KeyConfig::new(3, s, s / 10)?);
    /// assert!(limiter.try_acquire(&"ip:10.0.0.1", 3).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn new(default: KeyConfig) -> Self {
        KeyedLimiter::<()>::builder(default).build()
    }
}

impl KeyedLimiter<()> {
    /// A builder with `default` as the configuration of every key not configured
    /// otherwise.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter};
    /// let s = std::time::Duration::from_secs(1);
    /// let limiter: KeyedLimiter<u64> = KeyedLimiter::builder(KeyConfig::new(3, s, s)?).build();
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn builder(default: KeyConfig) -> KeyedLimiterBuilder {
        KeyedLimiterBuilder {
            default,
            max_keys: NonZeroUsize::new(100_000).unwrap_or(NonZeroUsize::MIN),
            shards: NonZeroUsize::new(16).unwrap_or(NonZeroUsize::MIN),
        }
    }
}

impl<K: Hash + Eq + Clone + Send, C: Clock> KeyedLimiter<K, C> {
    /// Gives `key` its own configuration (seed 004's configuration store). It applies
    /// from the key's next request, with a fresh count.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
    /// let s = std::time::Duration::from_secs(1);
    /// let limiter = KeyedLimiter::builder(KeyConfig::new(1, s, s)?).build_with_clock(ManualClock::new());
    /// limiter.set_config("vip", KeyConfig::new(100, s, s)?);
    /// assert!(limiter.try_acquire(&"vip", 100).is_admitted());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn set_config(&self, key: K, config: KeyConfig) {
        self.shard(&key).lock().configs.insert(key, config);
    }

    /// Puts `key` back on the default configuration.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
    /// let s = std::time::Duration::from_secs(1);
    /// let default = KeyConfig::new(1, s, s)?;
    /// let limiter = KeyedLimiter::builder(default).build_with_clock(ManualClock::new());
    /// limiter.set_config("vip", KeyConfig::new(100, s, s)?);
    /// limiter.remove_config(&"vip");
    /// assert_eq!(limiter.config(&"vip"), default);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn remove_config(&self, key: &K) {
        self.shard(key).lock().configs.remove(key);
    }

    /// The configuration that applies to `key`.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
    /// let s = std::time::Duration::from_secs(1);
    /// let default = KeyConfig::new(1, s, s)?;
    /// let limiter = KeyedLimiter::builder(default).build_with_clock(ManualClock::new());
    /// assert_eq!(limiter.config(&"anyone"), default);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn config(&self, key: &K) -> KeyConfig {
        self.shard(key)
            .lock()
            .configs
            .get(key)
            .copied()
            .unwrap_or(self.default)
    }

    /// How many keys have state now (stale ones included until swept).
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
    /// let s = std::time::Duration::from_secs(1);
    /// let limiter = KeyedLimiter::builder(KeyConfig::new(1, s, s)?).build_with_clock(ManualClock::new());
    /// let _ = limiter.try_acquire(&"a", 1);
    /// assert_eq!(limiter.len(), 1);
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().keys.len()).sum()
    }

    /// Whether no key has state.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter};
    /// let s = std::time::Duration::from_secs(1);
    /// assert!(KeyedLimiter::<u8>::new(KeyConfig::new(1, s, s)?).is_empty());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K, C: Clock> fmt::Debug for KeyedLimiter<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: usize = self.shards.iter().map(|s| s.lock().keys.len()).sum();
        f.debug_struct("KeyedLimiter")
            .field("default", &self.default)
            .field("shards", &self.shards.len())
            .field("keys", &keys)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn rejects_bad_granularity() {
        for g in [
            Duration::ZERO,
            Duration::from_millis(300),
            Duration::from_micros(100),
        ] {
            assert!(
                matches!(
                    KeyConfig::new(1, S, g),
                    Err(LimitError::BadGranularity { .. })
                ),
                "{g:?}"
            );
        }
        assert_eq!(
            KeyConfig::new(1, Duration::ZERO, S),
            Err(LimitError::ZeroWindow)
        );
    }

    #[test]
    fn a_changed_config_applies_from_the_next_request() {
        let clock = ManualClock::new();
        let l = KeyedLimiter::builder(KeyConfig::new(1, S, S).unwrap()).build_with_clock(clock);
        assert!(l.try_acquire(&"k", 1).is_admitted());
        assert!(!l.try_acquire(&"k", 1).is_admitted());
        l.set_config("k", KeyConfig::new(3, S, S).unwrap());
        assert!(l.try_acquire(&"k", 3).is_admitted());
        assert_eq!(l.config(&"k").capacity(), 3);
    }
}
