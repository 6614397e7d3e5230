//! The one place atomics and blocking primitives come from.
//!
//! Under `--cfg loom` every type here is loom's model-checked twin, so the loom
//! models in `tests/loom_*.rs` explore the real code. Nothing else in the crate
//! names `std::sync::atomic` directly; a test in `tests/layering.rs` keeps it so.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning: paceline never leaves shared state
/// half-written across a panic, so a poisoned lock still guards consistent data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A hint to the CPU that the caller is spinning; a yield point under loom.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Std's atomics even under loom, for process-wide statics (loom's atomics cannot be
/// built in a `static`) that carry no ordering any model depends on, such as id
/// counters.
pub(crate) mod unmodeled {
    pub(crate) use std::sync::atomic::AtomicU64;
}
