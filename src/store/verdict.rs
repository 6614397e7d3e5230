//! What the store decided, and when on its clock.

use super::error::StoreError;
use crate::limiters::Decision;
use crate::nanos::{self, Nanos};
use std::time::Duration;

/// The answer of [`RedisKeyedLimiter::check`](crate::RedisKeyedLimiter::check): the decision, with the server time it
/// was made at.
///
/// ```no_run
/// use paceline::{Limit, RedisKeyedLimiter};
/// let limiter = RedisKeyedLimiter::connect("redis://127.0.0.1:6379", Limit::per_second(5)?)?;
/// let v = limiter.check("user:241531", 1)?;
/// println!("{:?} at {} ns since the epoch, {} counted", v.decision(), v.server_time(), v.counted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreVerdict {
    decision: Decision,
    server_us: u64,
    counted: u64,
}

impl StoreVerdict {
    /// Admitted, or refused with `earliest` in nanoseconds since the Unix epoch on the
    /// server's clock ([`Decision::NEVER`] if more permits were asked than the limit).
    pub fn decision(&self) -> Decision {
        self.decision
    }

    /// The server's `TIME` the decision was made at, in nanoseconds since the Unix
    /// epoch (microsecond resolution). For `n = 0`, decided without asking, 0.
    pub fn server_time(&self) -> Nanos {
        self.server_us.saturating_mul(1000)
    }

    /// How long until a refused request could pass if nothing else passed meanwhile;
    /// `None` when admitted or never.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.decision {
            Decision::Refused { earliest } if earliest != Decision::NEVER => Some(
                nanos::to_duration(earliest.saturating_sub(self.server_time())),
            ),
            _ => None,
        }
    }

    /// The key's count after this decision: with [`Algorithm::SlidingWindow`](crate::Algorithm::SlidingWindow), what the
    /// current window holds; with [`Algorithm::Gcra`](crate::Algorithm::Gcra), the permits not yet paid off,
    /// rounded up.
    pub fn counted(&self) -> u64 {
        self.counted
    }

    /// The verdict for a request of `n = 0`, admitted without asking the store.
    pub(crate) fn unasked() -> Self {
        Self {
            decision: Decision::Admitted,
            server_us: 0,
            counted: 0,
        }
    }

    /// The verdict for the script's reply `{admitted, retry_us, now_us, count}`.
    pub(crate) fn from_reply(reply: &[i64]) -> Result<Self, StoreError> {
        let bad = || StoreError::BadReply {
            reply: format!("{reply:?}"),
        };
        let &[admitted, retry, now, counted] = reply else {
            return Err(bad());
        };
        let now = u64::try_from(now).map_err(|_| bad())?;
        let decision = match (admitted, retry) {
            (1, _) => Decision::Admitted,
            (0, -1) => Decision::Refused {
                earliest: Decision::NEVER,
            },
            (0, r) => Decision::Refused {
                earliest: now
                    .saturating_add(u64::try_from(r).map_err(|_| bad())?)
                    .saturating_mul(1000),
            },
            _ => return Err(bad()),
        };
        Ok(Self {
            decision,
            server_us: now,
            counted: u64::try_from(counted).map_err(|_| bad())?,
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn replies_become_verdicts_and_odd_replies_are_errors() {
        let v = StoreVerdict::from_reply(&[0, 500, 1_000_000, 3]).unwrap();
        assert_eq!(
            v.decision(),
            Decision::Refused {
                earliest: 1_000_500_000
            }
        );
        assert_eq!(v.retry_after(), Some(Duration::from_micros(500)));
        assert_eq!(v.server_time(), 1_000_000_000);
        assert_eq!(v.counted(), 3);
        let never = StoreVerdict::from_reply(&[0, -1, 5, 0]).unwrap();
        assert_eq!(never.decision().earliest(), Some(Decision::NEVER));
        assert_eq!(never.retry_after(), None);
        assert!(
            StoreVerdict::from_reply(&[1, 0, 5, 1])
                .unwrap()
                .decision()
                .is_admitted()
        );
        for bad in [
            &[1, 0, 5][..],
            &[2, 0, 5, 1],
            &[0, -2, 5, 1],
            &[1, 0, -5, 1],
        ] {
            assert!(
                matches!(
                    StoreVerdict::from_reply(bad),
                    Err(StoreError::BadReply { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
