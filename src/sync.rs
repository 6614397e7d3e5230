//! The one place atomics and blocking primitives come from.
//!
//! Under `--cfg loom` every type here is loom's model-checked twin, so the loom
//! models (`loom_tests` modules beside the code they check, run by `.ci/run`) explore
//! the real code. Nothing else in the crate
//! names `std::sync::atomic` directly; a test in `tests/layering/` keeps it so.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
// A compiler-only fence: where the CPU keeps an order by itself (x86's loads), this
// keeps the compiler from undoing it. loom has none: under loom a `fence` stands in.
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic::compiler_fence;
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};

// 128-bit words: portable-atomic's (native CMPXCHG16B / LDXP-STXP where the CPU has
// them, a lock otherwise). loom has no 128-bit atomic, so under loom a stand-in keeps
// the value under a loom mutex (see `loom_u128`).
#[cfg(loom)]
pub(crate) use self::loom_u128::AtomicU128;
#[cfg(not(loom))]
pub(crate) use portable_atomic::AtomicU128;

// Backing off after a lost compare-and-swap: crossbeam's exponential spin, and under
// loom a plain yield so that the model checker sees the retry as a yield point.
#[cfg(loom)]
pub(crate) use self::loom_backoff::Backoff;
#[cfg(not(loom))]
pub(crate) use crossbeam_utils::Backoff;

// Thread-local storage: loom's under loom (each modelled thread has its own), std's
// otherwise.
#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::thread_local;

// The mutex-based limiters' locks: parking_lot's in every build. Their types are the
// lock-free ones' twins for benchmarks and are not loom-modelled.
pub(crate) use parking_lot::Mutex as ParkingMutex;

/// A stand-in for a 128-bit atomic under loom.
///
/// loom cannot model a 128-bit atomic, so this keeps the value under a loom mutex:
/// each operation is one indivisible step, and loom still explores every
/// interleaving of whole operations, which is what the CAS-loop models check (no lost
/// update, bounded admissions). Orderings are not modelled: every use of the real
/// type is `Relaxed` on self-contained state, so there is no edge to check.
#[cfg(loom)]
mod loom_u128 {
    use super::Ordering;

    #[derive(Debug)]
    pub(crate) struct AtomicU128(loom::sync::Mutex<u128>);

    impl AtomicU128 {
        pub(crate) fn new(v: u128) -> Self {
            Self(loom::sync::Mutex::new(v))
        }

        pub(crate) fn load(&self, _: Ordering) -> u128 {
            *self.0.lock().unwrap()
        }

        pub(crate) fn compare_exchange_weak(
            &self,
            current: u128,
            new: u128,
            _: Ordering,
            _: Ordering,
        ) -> Result<u128, u128> {
            let mut v = self.0.lock().unwrap();
            if *v == current {
                *v = new;
                Ok(current)
            } else {
                Err(*v)
            }
        }

        pub(crate) fn is_lock_free() -> bool {
            false
        }
    }
}

/// Backing off under loom: every retry is a yield point.
#[cfg(loom)]
mod loom_backoff {
    #[derive(Debug, Default)]
    pub(crate) struct Backoff;

    impl Backoff {
        pub(crate) fn new() -> Self {
            Self
        }

        pub(crate) fn spin(&self) {
            super::spin_hint();
        }
    }
}

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

/// Std's primitives even under loom, for the engine's thread management (spawning,
/// parking and joining workers), which loom does not model: loom's `Arc` cannot hold
/// a trait object, and its primitives panic outside a model. The engine's lock-free
/// part (the cycle input) uses the modelled types above and has its own loom model.
pub(crate) mod threads {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
    pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};

    /// Locks a std mutex, ignoring poisoning (see [`super::lock`]).
    pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        match m.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}
