//! The hot word: one `u64` that hands out tickets, updated by `fetch_add` (average and
//! burst modes) or a CAS loop (strict and compensating modes).
//!
//! ```text
//!  63        54 53                        27 26                         0
//! +------------+----------------------------+----------------------------+
//! | epoch (10) |        ticket k (27)       |       idle i (27, ns)      |
//! +------------+----------------------------+----------------------------+
//! ```
//!
//! - **epoch**: the low 10 bits of the epoch number; selects the epoch's parameters
//!   (base, slice, mode) in the ring. Bumped by every reconfiguration and rollover.
//! - **ticket**: slots granted in this epoch. The slot of ticket `k` with idle `i` is
//!   `base + floor(k * slice) + i`.
//! - **idle**: nanoseconds forfeited in this epoch by late ops (strict and compensating
//!   modes); every later ticket's slot moves by it.
//!
//! A `fetch_add(n << TICKET_SHIFT)` never carries into the epoch: the op that sees its
//! ticket past [`TICKET_SOFT_LIMIT`] rolls the epoch over, and every op past it waits for
//! that rollover before taking another, so at most one take per thread lands past the
//! soft limit (a batch of up to [`MAX_BATCH`], or a reservation of up to the fast-path
//! limit), far below [`TICKET_MAX`].

/// Bits of the epoch field.
pub(crate) const EPOCH_BITS: u32 = 10;
/// Bits of the ticket field.
pub(crate) const TICKET_BITS: u32 = 27;
/// Bits of the idle field.
pub(crate) const IDLE_BITS: u32 = 27;

/// Position of the ticket field.
pub(crate) const TICKET_SHIFT: u32 = IDLE_BITS;
/// Position of the epoch field.
pub(crate) const EPOCH_SHIFT: u32 = IDLE_BITS + TICKET_BITS;

/// Largest idle value a word can hold (about 134 ms).
pub(crate) const IDLE_MAX: u64 = (1 << IDLE_BITS) - 1;
/// Largest ticket value a word can hold.
pub(crate) const TICKET_MAX: u64 = (1 << TICKET_BITS) - 1;
/// Mask of the epoch field after shifting down.
pub(crate) const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
/// A ticket at or past this rolls the epoch over (2^26: 64 Mi grants per epoch); the
/// 64 Mi tickets above it are headroom for threads racing the rollover.
pub(crate) const TICKET_SOFT_LIMIT: u64 = 1 << (TICKET_BITS - 1);
/// The largest batch one acquire may take (so a batch cannot jump the headroom).
pub(crate) const MAX_BATCH: u64 = 1 << 20;

/// One unpacked hot word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word {
    /// Low bits of the epoch number.
    pub(crate) epoch: u64,
    /// Tickets granted in the epoch.
    pub(crate) ticket: u64,
    /// Nanoseconds forfeited in the epoch.
    pub(crate) idle: u64,
}

impl Word {
    #[inline]
    pub(crate) fn unpack(w: u64) -> Self {
        Self {
            epoch: w >> EPOCH_SHIFT,
            ticket: (w >> TICKET_SHIFT) & TICKET_MAX,
            idle: w & IDLE_MAX,
        }
    }

    #[inline]
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.ticket <= TICKET_MAX && self.idle <= IDLE_MAX);
        ((self.epoch & EPOCH_MASK) << EPOCH_SHIFT) | (self.ticket << TICKET_SHIFT) | self.idle
    }

    /// The word a `fetch_add` of `n` tickets adds.
    #[inline]
    pub(crate) const fn tickets(n: u64) -> u64 {
        n << TICKET_SHIFT
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fields_fill_the_word_exactly() {
        assert_eq!(EPOCH_BITS + TICKET_BITS + IDLE_BITS, 64);
        assert_eq!(EPOCH_SHIFT, 54);
        assert_eq!(TICKET_SHIFT, 27);
    }

    #[test]
    fn pack_unpack_round_trips_extremes() {
        for w in [
            Word {
                epoch: 0,
                ticket: 0,
                idle: 0,
            },
            Word {
                epoch: EPOCH_MASK,
                ticket: TICKET_MAX,
                idle: IDLE_MAX,
            },
            Word {
                epoch: 5,
                ticket: 1,
                idle: IDLE_MAX,
            },
            Word {
                epoch: 1,
                ticket: TICKET_MAX,
                idle: 0,
            },
        ] {
            assert_eq!(Word::unpack(w.pack()), w);
        }
        assert_eq!(
            Word {
                epoch: EPOCH_MASK,
                ticket: TICKET_MAX,
                idle: IDLE_MAX
            }
            .pack(),
            u64::MAX
        );
    }

    #[test]
    fn ticket_increment_leaves_other_fields_alone() {
        let w = Word {
            epoch: 3,
            ticket: 10,
            idle: 77,
        }
        .pack();
        let after = Word::unpack(w + Word::tickets(5));
        assert_eq!(
            after,
            Word {
                epoch: 3,
                ticket: 15,
                idle: 77
            }
        );
    }

    #[test]
    fn epoch_field_wraps_without_touching_the_rest() {
        let w = Word {
            epoch: EPOCH_MASK + 1,
            ticket: 2,
            idle: 3,
        }
        .pack();
        assert_eq!(
            Word::unpack(w),
            Word {
                epoch: 0,
                ticket: 2,
                idle: 3
            }
        );
    }
}
