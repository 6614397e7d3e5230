//! The keyed limiter of seed 004: a sliding window per key, with per-key
//! configuration, state created on demand, sharded locks, and stale keys evicted.

use super::{Decision, LimitError};
use crate::clock::{Clock, MonotonicClock};
use crate::nanos::{self, Nanos};
use crate::sync::ParkingMutex;
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, RandomState};
use std::num::NonZeroUsize;
use std::time::Duration;

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

/// One key's counts: a ring of buckets, the newest at index `head % len`.
struct Window {
    config: KeyConfig,
    counts: Box<[u32]>,
    /// The newest bucket's number (time / granularity).
    head: u64,
    /// The sum of `counts`.
    total: u64,
}

impl Window {
    fn new(config: KeyConfig, bucket: u64) -> Self {
        Self {
            config,
            counts: vec![0; config.buckets()].into_boxed_slice(),
            head: bucket,
            total: 0,
        }
    }

    /// Moves the newest bucket forward to `bucket`, emptying the ones that left the
    /// window. A bucket behind the newest (a clock stepping back) counts in the newest.
    fn advance(&mut self, bucket: u64) {
        let len = self.counts.len() as u64;
        if bucket <= self.head {
            return;
        }
        if bucket - self.head >= len {
            self.counts.fill(0);
            self.total = 0;
        } else {
            for b in self.head + 1..=bucket {
                let slot = &mut self.counts[(b % len) as usize];
                self.total -= u64::from(*slot);
                *slot = 0;
            }
        }
        self.head = bucket;
    }

    /// When every count has left the window: the key is stale from then on.
    fn stale_at(&self) -> Nanos {
        (self.head + self.counts.len() as u64).saturating_mul(self.config.granularity)
    }

    fn try_acquire(&mut self, now: Nanos, n: u64) -> Decision {
        let cap = u64::from(self.config.capacity);
        if n > cap {
            return Decision::refused(None);
        }
        self.advance(now / self.config.granularity);
        let len = self.counts.len() as u64;
        if self.total + n <= cap {
            self.counts[(self.head % len) as usize] += n as u32;
            self.total += n;
            return Decision::Admitted;
        }
        // Free the oldest buckets until `n` fits; bucket b leaves when head = b + len.
        let excess = self.total + n - cap;
        let mut freed = 0;
        for age in (0..len.min(self.head + 1)).rev() {
            let b = self.head - age;
            freed += u64::from(self.counts[(b % len) as usize]);
            if freed >= excess {
                return Decision::Refused {
                    earliest: (b + len).saturating_mul(self.config.granularity),
                };
            }
        }
        unreachable!("excess never exceeds the window's total")
    }
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
    /// Takes `n` permits from `key`'s window if they fit now; creates the key's state
    /// on its first request.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
    /// let s = std::time::Duration::from_secs(1);
    /// let limiter = KeyedLimiter::builder(KeyConfig::new(3, s, s / 10)?).build_with_clock(ManualClock::new());
    /// assert!(limiter.try_acquire(&1u32, 3).is_admitted());
    /// assert_eq!(limiter.try_acquire(&1u32, 1).earliest(), Some(1_000_000_000));
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn try_acquire(&self, key: &K, n: u32) -> Decision {
        if n == 0 {
            return Decision::Admitted;
        }
        let now = self.clock.now();
        let mut guard = self.shard(key).lock();
        let shard = &mut *guard;
        if now >= shard.next_sweep {
            shard.sweep(now);
            shard.next_sweep = now.saturating_add(self.default.window);
        }
        let config = shard.configs.get(key).copied().unwrap_or(self.default);
        if let Some(w) = shard.keys.get_mut(key) {
            if w.config != config {
                *w = Window::new(config, now / config.granularity);
            }
            return w.try_acquire(now, u64::from(n));
        }
        if u64::from(n) > u64::from(config.capacity) {
            return Decision::refused(None);
        }
        if shard.keys.len() >= self.per_shard {
            let next_stale = shard.sweep(now);
            if shard.keys.len() >= self.per_shard {
                return Decision::Refused {
                    earliest: next_stale,
                };
            }
        }
        let mut w = Window::new(config, now / config.granularity);
        let d = w.try_acquire(now, u64::from(n));
        shard.keys.insert(key.clone(), w);
        d
    }

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

    /// Evicts every stale key now, returning how many were evicted. Requests sweep
    /// their shard on their own; this is for a caller that wants memory back at once.
    ///
    /// ```
    /// use paceline::{KeyConfig, KeyedLimiter, ManualClock};
    /// let s = std::time::Duration::from_secs(1);
    /// let clock = ManualClock::new();
    /// let limiter = KeyedLimiter::builder(KeyConfig::new(1, s, s)?).build_with_clock(clock.clone());
    /// let _ = limiter.try_acquire(&"a", 1);
    /// clock.advance(s);
    /// assert_eq!(limiter.sweep(), 1);
    /// assert!(limiter.is_empty());
    /// # Ok::<(), paceline::LimitError>(())
    /// ```
    pub fn sweep(&self) -> usize {
        let now = self.clock.now();
        self.shards
            .iter()
            .map(|s| {
                let mut s = s.lock();
                let before = s.keys.len();
                s.sweep(now);
                before - s.keys.len()
            })
            .sum()
    }

    fn shard(&self, key: &K) -> &ParkingMutex<Shard<K>> {
        let i = self.hasher.hash_one(key) % self.shards.len() as u64;
        &self.shards[i as usize]
    }
}

impl<K> Shard<K> {
    /// Evicts the stale keys; returns when the next of the others goes stale.
    fn sweep(&mut self, now: Nanos) -> Nanos {
        let mut next = Decision::NEVER;
        self.keys.retain(|_, w| {
            let at = w.stale_at();
            next = next.min(at);
            at > now
        });
        // `next` may be an evicted key's; the earliest live one is no earlier.
        self.keys
            .values()
            .map(Window::stale_at)
            .min()
            .unwrap_or(next)
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
    fn buckets_slide_and_earliest_frees_the_oldest() {
        let clock = ManualClock::new();
        let l = KeyedLimiter::builder(KeyConfig::new(4, S, S / 4).unwrap())
            .build_with_clock(clock.clone());
        assert!(l.try_acquire(&0, 1).is_admitted()); // bucket 0
        clock.set(300_000_000);
        assert!(l.try_acquire(&0, 3).is_admitted()); // bucket 1
        assert_eq!(l.try_acquire(&0, 1).earliest(), Some(1_000_000_000));
        assert_eq!(l.try_acquire(&0, 2).earliest(), Some(1_250_000_000));
        clock.set(1_000_000_000);
        assert!(l.try_acquire(&0, 1).is_admitted());
        assert!(!l.try_acquire(&0, 1).is_admitted());
        assert_eq!(l.try_acquire(&0, 5), Decision::refused(None));
    }

    #[test]
    fn a_flood_of_keys_stays_bounded_and_live_counts_survive() {
        let clock = ManualClock::new();
        let l = KeyedLimiter::builder(KeyConfig::new(1, S, S / 10).unwrap())
            .max_keys(NonZeroUsize::new(64).unwrap())
            .shards(NonZeroUsize::new(4).unwrap())
            .build_with_clock(clock.clone());
        assert!(l.try_acquire(&u64::MAX, 1).is_admitted());
        let mut refused = 0;
        for k in 0..10_000u64 {
            clock.advance_nanos(1_000);
            refused += u32::from(!l.try_acquire(&k, 1).is_admitted());
            assert!(l.len() <= 64);
        }
        assert!(
            refused > 9_000,
            "the flood is refused while every slot is live"
        );
        assert!(
            !l.try_acquire(&u64::MAX, 1).is_admitted(),
            "the live key kept its count"
        );
        // A second later every key is stale: all are swept, and any key gets in.
        clock.advance(S);
        assert_eq!(l.sweep(), 64);
        assert!(l.is_empty());
        assert!(l.try_acquire(&u64::MAX, 1).is_admitted());
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
