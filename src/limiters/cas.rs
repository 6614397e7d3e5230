//! The lock-free limiters' one update loop.

use super::Decision;
use crate::sync::{AtomicU64, AtomicU128, Backoff, Ordering};
use std::convert::Infallible;

/// A word a lock-free limiter keeps its whole state in.
///
/// Every access is `Relaxed`: the word publishes nothing but itself, and its
/// modification order makes each update count on top of the previous one (each
/// type's ground rules say why that suffices).
pub(crate) trait StateWord {
    /// The plain value.
    type Value: Copy;
    /// The current value.
    fn get(&self) -> Self::Value;
    /// Replaces `current` by `new`; on a lost race, the newer value.
    fn replace(&self, current: Self::Value, new: Self::Value) -> Result<Self::Value, Self::Value>;
}

impl StateWord for AtomicU64 {
    type Value = u64;

    #[inline]
    fn get(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }

    #[inline]
    fn replace(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

impl StateWord for AtomicU128 {
    type Value = u128;

    #[inline]
    fn get(&self) -> u128 {
        self.load(Ordering::Relaxed)
    }

    #[inline]
    fn replace(&self, current: u128, new: u128) -> Result<u128, u128> {
        self.compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

/// Computes the next value from the current one (or gives up with `Err`, such as a
/// refusal) and swaps it in; on a lost race, backs off and computes again from the
/// newer value.
#[inline]
pub(crate) fn update<W: StateWord, E>(
    word: &W,
    mut next: impl FnMut(W::Value) -> Result<W::Value, E>,
) -> Result<(), E> {
    let backoff = Backoff::new();
    let mut current = word.get();
    loop {
        match word.replace(current, next(current)?) {
            Ok(_) => return Ok(()),
            Err(newer) => {
                current = newer;
                backoff.spin();
            }
        }
    }
}

/// [`update`] for a try-acquire: `next` admits with the new value or refuses
/// with the decision to return.
#[inline]
pub(crate) fn decide<W: StateWord>(
    word: &W,
    next: impl FnMut(W::Value) -> Result<W::Value, Decision>,
) -> Decision {
    update(word, next).err().unwrap_or(Decision::Admitted)
}

/// [`update`] that always succeeds.
#[inline]
pub(crate) fn apply<W: StateWord>(word: &W, mut next: impl FnMut(W::Value) -> W::Value) {
    let _ = update(word, |v| Ok::<_, Infallible>(next(v)));
}
