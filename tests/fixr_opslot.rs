//! Review p18, F3: a public `OpSlot` polled again after its op's `poll`
//! panicked.

use paceline::OpSlot;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::{Context, Poll, Waker};

/// Regression (review p18, F3): the panicked op stayed in the slot, which
/// still read busy, and the next `poll` polled the panicked `async` block
/// again ("`async fn` resumed after panicking"). Now the op is dropped as the
/// panic leaves, and the slot answers `no op` as its doc says; a new op runs.
#[test]
fn a_slot_whose_op_panicked_answers_no_op_and_takes_a_new_op() {
    let mut slot = OpSlot::new(|cycle| async move {
        if cycle == 0 {
            panic!("op 0 panics");
        }
        Ok(())
    });
    let mut cx = Context::from_waker(Waker::noop());
    slot.start(0);
    let panicked = catch_unwind(AssertUnwindSafe(|| slot.poll(&mut cx)));
    assert!(panicked.is_err());
    assert!(!slot.is_busy());
    match slot.poll(&mut cx) {
        Poll::Ready(Err(e)) => assert_eq!(e.kind(), "no op"),
        other => panic!("{other:?}"),
    }
    slot.start(1);
    assert!(matches!(slot.poll(&mut cx), Poll::Ready(Ok(()))));
}
