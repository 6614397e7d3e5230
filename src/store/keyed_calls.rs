//! The calls of the store-backed keyed limiter: each decision is one script on
//! the server (`check`, `try_acquire`), or a pipeline of them in one round trip
//! (`check_many`, `try_acquire_many`); a lost script cache is reloaded and the
//! refused calls sent again; an unreachable store is answered by the fail mode.
//! Configuration, building and the limit shapes are in `keyed.rs`.

use super::{FailMode, RedisKeyedLimiter, Shape};
use crate::limiters::{Decision, Limiter};
use crate::nanos;
use crate::store::error::StoreError;
use crate::store::verdict::StoreVerdict;
use crate::sync::threads::Ordering;
use redis::{Connection, ErrorKind, RedisResult, ServerErrorKind};
use std::time::{SystemTime, UNIX_EPOCH};

impl RedisKeyedLimiter {
    /// A [`Limiter`] for one key: `try_acquire(n)` is this limiter's
    /// [`try_acquire(key, n)`](Self::try_acquire).
    ///
    /// ```no_run
    /// use paceline::{Limit, Limiter, RedisKeyedLimiter};
    /// fn drain(l: &dyn Limiter) -> usize {
    ///     (0..10).filter(|_| l.try_acquire(1).is_admitted()).count()
    /// }
    /// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(3)?)?;
    /// assert_eq!(drain(&limiter.key("fresh-key")), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key<'a>(&'a self, key: &'a str) -> RedisKey<'a> {
        RedisKey { limiter: self, key }
    }

    /// Takes `n` permits from `key` if its window has room, as decided by the store;
    /// when the store cannot be reached, answers by the fail mode (refused until the
    /// local clock plus the retry delay, or admitted) and counts it in
    /// [`store_errors`](Self::store_errors).
    ///
    /// A refusal's `earliest` is in nanoseconds since the Unix epoch on the server's
    /// clock. `n = 0` is admitted without asking the store.
    ///
    /// ```no_run
    /// use paceline::{Limit, RedisKeyedLimiter};
    /// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(1)?)?;
    /// assert!(limiter.try_acquire("k", 1).is_admitted());
    /// assert!(!limiter.try_acquire("k", 1).is_admitted());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire(&self, key: &str, n: u32) -> Decision {
        match self.check(key, n) {
            Ok(v) => v.decision(),
            Err(_) => self.failed(),
        }
    }

    /// [`try_acquire`](Self::try_acquire) for many keys in one round trip; the answers
    /// are in the order of `requests`. If the store cannot be reached, every answer
    /// (but those for `n = 0`) is the fail mode's, counted once per request.
    ///
    /// ```no_run
    /// use paceline::{Limit, RedisKeyedLimiter};
    /// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(1)?)?;
    /// let d = limiter.try_acquire_many(&[("a", 1), ("b", 1), ("a", 1)]);
    /// assert_eq!(d.iter().filter(|d| d.is_admitted()).count(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_many<K: AsRef<str>>(&self, requests: &[(K, u32)]) -> Vec<Decision> {
        match self.check_many(requests) {
            Ok(v) => v.into_iter().map(|v| v.decision()).collect(),
            Err(_) => requests
                .iter()
                .map(|&(_, n)| {
                    if n == 0 {
                        Decision::Admitted
                    } else {
                        self.failed()
                    }
                })
                .collect(),
        }
    }

    /// Takes `n` permits from `key` if its window has room, and says what the store
    /// decided and when; an unreachable store is an error here, not a decision.
    ///
    /// ```no_run
    /// use paceline::{Limit, RedisKeyedLimiter};
    /// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(1)?)?;
    /// let first = limiter.check("k2", 1)?;
    /// let second = limiter.check("k2", 1)?;
    /// assert!(first.decision().is_admitted());
    /// assert!(second.retry_after().unwrap() <= std::time::Duration::from_secs(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self, key: &str, n: u32) -> Result<StoreVerdict, StoreError> {
        if n == 0 {
            return Ok(StoreVerdict::unasked());
        }
        let shape = self.shape(key);
        let store_key = self.store_key(key);
        let mut inv = self.script.key(&store_key);
        inv.arg(shape.args(self.algorithm, n));
        let reply: Vec<i64> = self.pool.with_conn(|c| inv.invoke(c))?;
        StoreVerdict::from_reply(&reply)
    }

    /// [`check`](Self::check) for many keys in one round trip: a pipeline of script
    /// calls, each decided atomically on its own, answered in the order of `requests`.
    ///
    /// ```no_run
    /// use paceline::{Limit, RedisKeyedLimiter};
    /// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(1)?)?;
    /// let v = limiter.check_many(&[("x", 1), ("y", 1)])?;
    /// assert!(v.iter().all(|v| v.decision().is_admitted()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_many<K: AsRef<str>>(
        &self,
        requests: &[(K, u32)],
    ) -> Result<Vec<StoreVerdict>, StoreError> {
        let mut out = vec![StoreVerdict::unasked(); requests.len()];
        let asked: Vec<usize> = (0..requests.len()).filter(|&i| requests[i].1 > 0).collect();
        if asked.is_empty() {
            return Ok(out);
        }
        let commands: Vec<redis::Cmd> = asked
            .iter()
            .map(|&i| {
                let (key, n) = (requests[i].0.as_ref(), requests[i].1);
                let shape = self.shape(key);
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(self.script.get_hash())
                    .arg(1)
                    .arg(self.store_key(key))
                    .arg(shape.args(self.algorithm, n));
                cmd
            })
            .collect();
        let replies = self.pool.with_conn(|c| {
            let run = |c: &mut Connection, which: &[usize]| {
                let mut pipe = redis::pipe();
                for &j in which {
                    pipe.add_command(commands[j].clone());
                }
                pipe.ignore_errors()
                    .query::<Vec<RedisResult<Vec<i64>>>>(c)
            };
            let all: Vec<usize> = (0..commands.len()).collect();
            let mut replies = run(c, &all)?;
            // A server that lost its script cache (restarted, SCRIPT FLUSH) refuses
            // EVALSHA: those calls did nothing; load the script and send them again.
            let missing: Vec<usize> = all
                .iter()
                .copied()
                .filter(|&j| {
                    matches!(&replies[j], Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript))
                })
                .collect();
            if !missing.is_empty() {
                self.script.load(c)?;
                for (j, r) in missing.iter().zip(run(c, &missing)?) {
                    replies[*j] = r;
                }
            }
            replies.into_iter().collect::<RedisResult<Vec<Vec<i64>>>>()
        })?;
        for (&i, reply) in asked.iter().zip(replies) {
            out[i] = StoreVerdict::from_reply(&reply)?;
        }
        Ok(out)
    }

    fn shape(&self, key: &str) -> Shape {
        self.configs
            .read()
            .get(key)
            .map_or(self.default, |&(_, s)| s)
    }

    /// The fail mode's answer, counted.
    fn failed(&self) -> Decision {
        self.errors.fetch_add(1, Ordering::Relaxed);
        match self.fail {
            FailMode::Open => Decision::Admitted,
            FailMode::Closed => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, nanos::from_duration);
                Decision::Refused {
                    earliest: now.saturating_add(nanos::from_duration(self.retry_after)),
                }
            }
        }
    }
}

/// One key of a [`RedisKeyedLimiter`], as a [`Limiter`]; see
/// [`RedisKeyedLimiter::key`].
///
/// ```no_run
/// use paceline::{Limit, Limiter, RedisKeyedLimiter};
/// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(3)?)?;
/// let one: &dyn Limiter = &limiter.key("user:9");
/// assert!(one.try_acquire(3).is_admitted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RedisKey<'a> {
    limiter: &'a RedisKeyedLimiter,
    key: &'a str,
}

impl Limiter for RedisKey<'_> {
    fn try_acquire(&self, n: u32) -> Decision {
        self.limiter.try_acquire(self.key, n)
    }
}
