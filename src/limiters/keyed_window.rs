//! The request path of the keyed limiter: the shard lock, one key's window of
//! buckets, and the eviction of stale keys (each shard sweeps once per default
//! window, and before refusing room to a new key). Configuration and building
//! are in `keyed.rs`.

use super::{KeyConfig, KeyedLimiter, Shard};
use crate::clock::Clock;
use crate::limiters::Decision;
use crate::nanos::Nanos;
use crate::sync::ParkingMutex;
use std::hash::{BuildHasher, Hash};

/// One key's counts: a ring of buckets, the newest at index `head % len`.
pub(super) struct Window {
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

    pub(super) fn shard(&self, key: &K) -> &ParkingMutex<Shard<K>> {
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::num::NonZeroUsize;
    use std::time::Duration;

    const S: Duration = Duration::from_secs(1);

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
}
