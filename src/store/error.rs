//! Why a store-backed limiter could not be built or could not decide.

use std::error::Error;
use std::fmt;

/// Why a [`RedisKeyedLimiter`](crate::RedisKeyedLimiter) could not be built, or could
/// not reach a decision. Each variant says how to fix it.
///
/// A refusal is not an error: it is a [`Decision`](crate::Decision). These are the
/// cases where the store gave no answer;
/// [`try_acquire`](crate::RedisKeyedLimiter::try_acquire) turns them into a refusal
/// (fail closed, the default) or an admission ([`FailMode::Open`](crate::FailMode::Open)).
///
/// ```
/// use paceline::{Limit, RedisKeyedLimiter, StoreError};
/// let err = RedisKeyedLimiter::connect("127.0.0.1:6379", Limit::per_second(10)?).unwrap_err();
/// assert!(matches!(err, StoreError::BadUrl { .. }));
/// assert!(err.to_string().contains("redis://127.0.0.1:6379"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// A shared schedule's URL (`coordinate=`) is not `redis://HOST:PORT/NAME`, such
    /// as `redis://127.0.0.1:6379/demo`.
    BadCoordinate {
        /// The URL given, with any password replaced by `***`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A shared schedule of that name is running with another cycle range: run the
    /// activity with the same `cycles` as the processes already in it, or give it
    /// another schedule name.
    Mismatch {
        /// The schedule's URL, password hidden.
        url: String,
        /// What differs.
        reason: String,
    },
    /// The shared schedule's state vanished from the store while this process was
    /// in it (a restart of a server without persistence, a `FLUSHALL`, an eviction):
    /// run Redis with persistence (`appendonly yes`) and `maxmemory-policy
    /// noeviction`, and start the run again.
    Erased {
        /// The schedule's URL, password hidden.
        url: String,
    },
    /// The shared schedule was stopped (a control `stop` reaches every process) and
    /// some of its processes are still finishing: wait for them to exit (their
    /// membership ends within 2 s of it) and start again, or use another schedule
    /// name.
    Stopped {
        /// The schedule's URL, password hidden.
        url: String,
    },
    /// The start barrier (`min_members`) waited its timeout and fewer processes
    /// came: start the others with the same `coordinate` and `cycles`, lower
    /// `min_members`, or raise `min_members_timeout`.
    TooFewMembers {
        /// The schedule's URL, password hidden.
        url: String,
        /// The most processes live on the schedule at once while this one waited,
        /// this one included.
        came: u64,
        /// How many the barrier waited for (the most any process asked for).
        need: u64,
        /// How long this process waited.
        waited: std::time::Duration,
    },
    /// The URL cannot be parsed or names something this build cannot speak (TLS,
    /// another scheme). Write it as `redis://HOST:PORT/DB`, such as
    /// `redis://127.0.0.1:6379/0`, or `unix:///path/to/redis.sock`.
    BadUrl {
        /// The URL given, with any password replaced by `***`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No connection could be made (refused, timed out, authentication failed), or the
    /// limiter is waiting out its retry delay after such a failure. Start
    /// `redis-server` at that address or fix the URL; the limiter reconnects by itself.
    Unreachable {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// What the connection attempt said.
        reason: String,
        /// The kind of the I/O error underneath, when the attempt failed on one
        /// (`ConnectionRefused`: nothing listens there; `TimedOut`: nothing
        /// answered); `None` for another failure (authentication, a thread that
        /// could not start, a store call that gave up). The join's check for a
        /// refused connection and the shared schedule's outage verdict match on
        /// it, never on the message, which the OS words in its own language.
        io: Option<std::io::ErrorKind>,
    },
    /// The connection failed while a command was on it (the server stopped, restarted
    /// or did not answer within the timeout). The next call reconnects. A decision whose
    /// reply was lost may have been counted on the server.
    Lost {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// The client's error.
        source: redis::RedisError,
    },
    /// The server answered with an error, such as a key under the limiter's prefix that
    /// another program wrote with another type, or a server that ran out of memory.
    /// Keep the prefix to the limiter, or give it its own with
    /// [`prefix`](crate::RedisKeyedLimiterBuilder::prefix).
    Server {
        /// The URL, with any password replaced by `***`.
        url: String,
        /// The server's error.
        source: redis::RedisError,
    },
    /// The script answered something other than its four integers: the server is not a
    /// Redis 7 (or compatible) server. Point the URL at one.
    BadReply {
        /// What came back.
        reply: String,
    },
    /// A limit the store cannot count exactly: its window is not a whole number of
    /// microseconds (the resolution of the server's `TIME`), or `permits × window in
    /// microseconds` (for GCRA also `burst × window`) exceeds 2^51 (the script counts
    /// in exact doubles). Use a window in whole microseconds, or fewer permits (or a
    /// smaller burst) over a shorter window.
    BadLimit {
        /// The key the limit was for; `None` for the default.
        key: Option<String>,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadUrl { url, reason } => write!(
                f,
                "redis URL `{url}` is not usable: {reason}; write it as redis://HOST:PORT/DB, \
                 such as redis://127.0.0.1:6379/0"
            ),
            Self::BadCoordinate { url, reason } => write!(
                f,
                "coordinate URL `{url}` is not usable: {reason}; write it as \
                 redis://HOST:PORT/NAME, such as redis://127.0.0.1:6379/demo"
            ),
            Self::Mismatch { url, reason } => write!(
                f,
                "the shared schedule {url} is running with {reason}; give every process the \
                 same cycles, or use another schedule name"
            ),
            Self::Erased { url } => write!(
                f,
                "the shared schedule {url} vanished from the store (a restart without \
                 persistence, FLUSHALL or eviction); run redis with appendonly yes and \
                 maxmemory-policy noeviction, and start the run again"
            ),
            Self::TooFewMembers {
                url,
                came,
                need,
                waited,
            } => write!(
                f,
                "the shared schedule {url} waited {:.0} s for {need} processes (min_members) \
                 and {came} came, this one included: start the other {} with the same \
                 coordinate and cycles (on Kubernetes, an Indexed Job with parallelism = \
                 completions = {need}), or lower min_members, or give them longer with \
                 min_members_timeout (it was {:.0} s)",
                waited.as_secs_f64(),
                need.saturating_sub(*came),
                waited.as_secs_f64()
            ),
            Self::Stopped { url } => write!(
                f,
                "the shared schedule {url} was stopped and its processes are still \
                 finishing; start again once they have exited, or use another schedule name"
            ),
            Self::Unreachable { url, reason, .. } => write!(
                f,
                "cannot reach redis at {url}: {reason}; start redis-server there or fix the URL"
            ),
            Self::Lost { url, source } => write!(
                f,
                "the connection to redis at {url} failed mid-command ({source}); check that \
                 the server is up: the next call reconnects"
            ),
            Self::Server { url, source } if is_oom(source) => write!(
                f,
                "redis at {url} is out of memory ({source}): it refuses writes at its \
                 maxmemory under the noeviction policy; raise maxmemory (CONFIG SET \
                 maxmemory), free memory, or point the URL at a server with room"
            ),
            Self::Server { url, source } => write!(
                f,
                "redis at {url} answered with an error ({source}); keep the limiter's key \
                 prefix to the limiter alone"
            ),
            Self::BadReply { reply } => write!(
                f,
                "unexpected reply from the limiter's script ({reply}); point the URL at a \
                 Redis 7 server"
            ),
            Self::BadLimit { key, reason } => {
                match key {
                    Some(k) => write!(f, "the limit for key `{k}` ")?,
                    None => f.write_str("the default limit ")?,
                }
                write!(f, "cannot be counted on redis: {reason}")
            }
        }
    }
}

impl Error for StoreError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Lost { source, .. } | Self::Server { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Whether the server refused a write for want of memory (`OOM`).
fn is_oom(e: &redis::RedisError) -> bool {
    e.code() == Some("OOM") || e.to_string().contains("OOM ")
}

impl StoreError {
    /// Whether no connection could be made because the server refused it (nothing
    /// listens there): trying again soon will not help. Decided by the I/O error's
    /// kind (`ConnectionRefused`; for a Unix socket, no socket file), not by the
    /// words of its message.
    pub(crate) fn is_refused(&self) -> bool {
        match self {
            Self::Unreachable { io, .. } => *io == Some(std::io::ErrorKind::ConnectionRefused),
            Self::Lost { source, .. } => source.is_connection_refusal(),
            _ => false,
        }
    }

    /// Whether the same call may succeed if tried again soon: the server could not
    /// be reached or the connection failed, or it answered that it is not ready
    /// (loading its data after a restart, a failover under way).
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Self::Lost { .. } | Self::Unreachable { .. } => true,
            Self::Server { source, .. } => {
                matches!(source.retry_method(), redis::RetryMethod::WaitAndRetry)
            }
            _ => false,
        }
    }
}

/// `url` with the password of its user-info part (`redis://user:PASSWORD@host`)
/// replaced by `***`, for messages.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    // The url crate ends the user-info at the last `@` before the first `/`,
    // `?` or `#`; a password holding one of those does not parse, and the
    // message that says so must not print it.
    // Masked to the last `@` anywhere: over-masking a path or query that
    // holds one is the safe side (a password holding `@` then `/` left its
    // tail shown when the mask ended at the host part).
    match rest.rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split_once(':').map_or("", |(u, _)| u);
            let hidden = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                "***".to_string()
            };
            format!("{scheme}://{hidden}{}", &rest[at..])
        }
        None => url.to_string(),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    fn unreachable(reason: &str, io: Option<ErrorKind>) -> StoreError {
        StoreError::Unreachable {
            url: "redis://h".into(),
            reason: reason.into(),
            io,
        }
    }

    /// Regression (review of issue 23): `is_refused` looked for the word
    /// "refused" in the message, which an OS in another language words otherwise
    /// (`Connexion refusée`) and which another failure's message may hold. It
    /// matches the I/O error's kind.
    #[test]
    fn refused_is_the_io_kind_not_a_word_of_the_message() {
        assert!(
            unreachable(
                "Connexion refusée (os error 111)",
                Some(ErrorKind::ConnectionRefused)
            )
            .is_refused()
        );
        assert!(!unreachable("connection refused by the proxy's policy", None).is_refused());
        assert!(!unreachable("refused? no: timed out", Some(ErrorKind::TimedOut)).is_refused());
        let lost = |e: std::io::Error| StoreError::Lost {
            url: "redis://h".into(),
            source: redis::RedisError::from(e),
        };
        assert!(lost(std::io::Error::new(ErrorKind::ConnectionRefused, "nope")).is_refused());
        assert!(!lost(std::io::Error::new(ErrorKind::ConnectionReset, "refused")).is_refused());
    }

    /// A real refusal: nothing listens on a loopback port just freed. The pool's
    /// error keeps the kind, in the first attempt and in the retry delay after it.
    #[test]
    fn a_closed_port_is_unreachable_as_refused_with_its_io_kind() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("{e}"));
        let pool = super::super::conn::Pool::open(
            &format!("redis://127.0.0.1:{port}/0"),
            1,
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(5),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let script = redis::Script::new("return 1");
        for attempt in ["first", "in the retry delay"] {
            match pool.warm(&script) {
                Err(e @ StoreError::Unreachable { io, .. }) => {
                    assert_eq!(io, Some(ErrorKind::ConnectionRefused), "{attempt}: {e}");
                    assert!(e.is_refused(), "{attempt}");
                    assert!(e.is_transient(), "{attempt}");
                }
                other => panic!("{attempt}: {other:?}"),
            }
        }
    }

    #[test]
    fn passwords_are_redacted_and_the_rest_kept() {
        assert_eq!(
            redact("redis://127.0.0.1:6379/0"),
            "redis://127.0.0.1:6379/0"
        );
        assert_eq!(redact("redis://u:pw@h:1/2"), "redis://u:***@h:1/2");
        assert_eq!(redact("redis://:pw@h:1"), "redis://:***@h:1");
        assert_eq!(redact("redis://secret@h"), "redis://***@h");
        assert_eq!(redact("h:1"), "h:1");
        // A password holding `/`, `?` or `#` (the URL does not parse): masked
        // to the last `@` (regression: `:pa/ss@` printed `pa/ss`).
        assert_eq!(redact("redis://:pa/ss@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(redact("redis://u:pa?ss@h"), "redis://u:***@h");
        assert_eq!(redact("redis://u:pa#ss@h"), "redis://u:***@h");
        assert_eq!(redact("rediss://u:p@ss@h:1"), "rediss://u:***@h:1");
        // An `@` after the host part is taken as a password's, to be safe.
        assert_eq!(redact("redis://h/a@b"), "redis://***@b");
        // A raw `@` then `/` in the password (review: the tail `ss/w` showed).
        assert_eq!(
            redact("redis://:p@ss/w@127.0.0.1:6379/demo"),
            "redis://:***@127.0.0.1:6379/demo"
        );
    }

    #[test]
    fn messages_are_lower_case_and_say_how_to_fix() {
        let all = [
            StoreError::BadUrl {
                url: "x".into(),
                reason: "no scheme".into(),
            },
            StoreError::Unreachable {
                url: "redis://h".into(),
                reason: "refused".into(),
                io: None,
            },
            StoreError::BadReply {
                reply: "nil".into(),
            },
            StoreError::BadLimit {
                key: None,
                reason: "give a window in whole microseconds".into(),
            },
            StoreError::BadCoordinate {
                url: "redis://h:1".into(),
                reason: "it names no schedule".into(),
            },
            StoreError::Mismatch {
                url: "redis://h:1/a".into(),
                reason: "cycles 0..10, not 0..5".into(),
            },
            StoreError::TooFewMembers {
                url: "redis://h:1/a".into(),
                came: 2,
                need: 3,
                waited: std::time::Duration::from_secs(60),
            },
            StoreError::Erased {
                url: "redis://h:1/a".into(),
            },
            StoreError::Stopped {
                url: "redis://h:1/a".into(),
            },
        ];
        for e in all {
            let s = e.to_string();
            assert!(s.chars().next().unwrap().is_lowercase(), "{s}");
            assert!(
                ["write it", "start", "point", "give"]
                    .iter()
                    .any(|w| s.contains(w)),
                "{s}"
            );
        }
    }
}
