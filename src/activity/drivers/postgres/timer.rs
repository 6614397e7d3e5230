//! An op timeout on a timer kept registered from one op to the next on a
//! connection (whose ops run one after another): the op polls the timer,
//! which registers its waker and nothing else, where `tokio::time::timeout`
//! inserts a timer into tokio's wheel and removes it per op, and unparks the
//! runtime's driver (an `eventfd` write) when the new timer is due before the
//! driver's planned wake-up: 0.22-0.37 times per op on the postgres closed
//! loop (`benches/README.md`, session 12).
//!
//! | fast path | why it holds | pinned by |
//! |---|---|---|
//! | one timer per connection, set again only when it fires | the ops on one connection run one after another with the same timeout, so the timer set for an earlier op is due no later than this op's deadline (one set later is brought forward); when it fires early it is set to this op's deadline, so an op times out at its own deadline, to the timer's millisecond | `the_kept_timer_fires_at_each_ops_own_deadline` |

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use tokio::time::{Instant, Sleep};

/// A timer kept across ops; made on first use (it needs the runtime).
pub(super) type Alarm = Option<Pin<Box<Sleep>>>;

/// Awaits `fut` until `deadline` on `alarm`; `None` past it.
pub(super) async fn within<T>(
    alarm: &mut Alarm,
    deadline: Instant,
    fut: impl Future<Output = T>,
) -> Option<T> {
    let alarm = match alarm {
        Some(a) => {
            if a.deadline() > deadline {
                a.as_mut().reset(deadline);
            }
            a
        }
        None => alarm.insert(Box::pin(tokio::time::sleep_until(deadline))),
    };
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        while alarm.as_mut().poll(cx).is_ready() {
            if alarm.deadline() >= deadline {
                return Poll::Ready(None);
            }
            alarm.as_mut().reset(deadline);
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::sleep;

    #[test]
    fn the_kept_timer_fires_at_each_ops_own_deadline() {
        // The timer kept across a holder's ops was set for an earlier op: it
        // fires before this op's deadline, which must neither time the op out
        // early nor let it run past its own deadline.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t0 = Instant::now();
            let mut alarm: Alarm = Some(Box::pin(sleep(Duration::from_millis(100))));
            sleep(Duration::from_millis(60)).await;
            let deadline = Instant::now() + Duration::from_millis(100);
            // Ends after the stale deadline, before its own: it is not cut.
            let done = within(&mut alarm, deadline, async {
                sleep(Duration::from_millis(70)).await;
                7
            })
            .await;
            assert_eq!(done, Some(7));
            // Never ends: cut at its own deadline, not before.
            let cut = within(&mut alarm, deadline, std::future::pending::<()>()).await;
            assert_eq!(cut, None);
            assert!(Instant::now() >= deadline, "{:?}", t0.elapsed());
            // The next op's later deadline is honoured from the fired timer.
            let next = Instant::now() + Duration::from_millis(30);
            let cut = within(&mut alarm, next, std::future::pending::<()>()).await;
            assert_eq!(cut, None);
            assert!(Instant::now() >= next);
            // A timer set later than the op's deadline is brought forward, and
            // a holder without one yet gets one.
            let mut late: Alarm = Some(Box::pin(sleep(Duration::from_secs(3600))));
            let soon = Instant::now() + Duration::from_millis(20);
            assert_eq!(
                within(&mut late, soon, std::future::pending::<()>()).await,
                None
            );
            let mut none: Alarm = None;
            let soon = Instant::now() + Duration::from_millis(20);
            assert_eq!(
                within(&mut none, soon, std::future::pending::<()>()).await,
                None
            );
            assert!(Instant::now() >= soon);
            assert_eq!(
                within(&mut none, soon + Duration::from_secs(5), async { 1 }).await,
                Some(1)
            );
            assert!(t0.elapsed() < Duration::from_secs(60));
        });
    }
}
