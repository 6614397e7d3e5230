//! The slot arithmetic of leased tickets and the local strictness between leases,
//! as pure functions: the same double operations as the scripts (`super::scripts`),
//! so a ticket has the same slot in every process.

use crate::nanos::Nanos;

/// The epoch a lease's tickets belong to, as the lease script returned it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Epoch {
    /// The spec's version.
    pub(super) ver: u64,
    /// The epoch's first ticket.
    pub(super) first: u64,
    /// The first ticket's slot, ns since the schedule's origin.
    pub(super) base: u64,
    /// ns per ticket (exact: never rounded to a whole nanosecond per ticket).
    pub(super) slice: f64,
    /// The spec's strictness (0 average, below 1 compensating, 1 strict, above 1
    /// burst allowance).
    pub(super) strict: f64,
    /// The fraction of lateness a late ticket forfeits (strict 1, compensating the
    /// strictness rounded down to a power of two, else 0).
    pub(super) frac: f64,
    /// The burst anchor: ticket k starts no earlier than `anchor + floor((k - first)
    /// x slice / strict)` (burst allowance only).
    pub(super) anchor: Option<i64>,
}

impl Epoch {
    /// Ticket `k`'s slot: `base + floor((k - first) x slice)`.
    pub(super) fn slot(&self, k: u64) -> Nanos {
        self.base + ((k - self.first) as f64 * self.slice).floor() as u64
    }

    /// The earliest start of ticket `k`: its slot, or later while a backlog is
    /// released at `strict x rate` (burst allowance).
    pub(super) fn earliest(&self, k: u64) -> Nanos {
        let slot = self.slot(k);
        match self.anchor {
            Some(a) if self.strict > 1.0 => {
                let spaced =
                    a + ((k - self.first) as f64 * self.slice / self.strict).floor() as i64;
                slot.max(spaced.max(0) as u64)
            }
            _ => slot,
        }
    }

    /// How many of the tickets `next..end` to forfeit when one is taken at `t`: the
    /// late ones but the last (which keeps its slot), times `frac`.
    pub(super) fn forfeit_at(&self, next: u64, end: u64, t: Nanos) -> u64 {
        if self.frac <= 0.0 || next >= end || t < self.base {
            return 0;
        }
        let due = self.first + ((t - self.base) as f64 / self.slice).floor() as u64;
        let last_late = due.min(end - 1);
        if last_late <= next {
            return 0;
        }
        ((last_late - next) as f64 * self.frac).floor() as u64
    }
}

/// The fraction of its lateness a late ticket forfeits under strictness `s`, as
/// the local pacer rounds it: 1 when strict, `s` rounded down to a power of two
/// when compensating, 0 otherwise.
pub(super) fn forfeit_fraction(s: f64) -> f64 {
    if s == 1.0 {
        1.0
    } else if s > 0.0 && s < 1.0 {
        2f64.powi(s.log2().floor() as i32)
    } else {
        0.0
    }
}

/// `x` as the scripts read it back: the shortest string that parses to the same
/// double.
pub(super) fn exact(x: f64) -> String {
    format!("{x:?}")
}

/// How many tickets one lease takes: about `span` of this process's share of
/// `rate` (ops/s) among `live` processes, at least 1 and at most 4096.
pub(super) fn lease_size(rate: f64, live: u64, span: Nanos) -> u64 {
    let share = rate / live.max(1) as f64;
    (share * span as f64 / 1e9).ceil().clamp(1.0, 4096.0) as u64
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn epoch(rate: f64, strict: f64) -> Epoch {
        Epoch {
            ver: 1,
            first: 100,
            base: 1_000_000,
            slice: 1e9 / rate,
            strict,
            frac: forfeit_fraction(strict),
            anchor: None,
        }
    }

    #[test]
    fn slots_are_exact_over_a_million_tickets() {
        let e = epoch(30_000.0, 0.0);
        assert_eq!(e.slot(100), 1_000_000);
        assert_eq!(e.slot(101), 1_033_333);
        assert_eq!(e.slot(103), 1_100_000);
        // 3e6 tickets at 30K/s: 100 s to the nanosecond.
        assert_eq!(e.slot(100 + 3_000_000), 1_000_000 + 100_000_000_000);
    }

    #[test]
    fn strict_forfeits_every_late_ticket_but_the_last() {
        let e = epoch(1000.0, 1.0);
        // Tickets 100.. have slots 1 ms, 2 ms, ...: at 5.5 ms, 100..=104 are due.
        assert_eq!(e.forfeit_at(100, 110, 5_500_000), 4);
        // Never past the lease's last ticket.
        assert_eq!(e.forfeit_at(100, 103, 5_500_000), 2);
        // On time: nothing.
        assert_eq!(e.forfeit_at(100, 110, 1_000_000), 0);
        assert_eq!(e.forfeit_at(100, 110, 999_999), 0);
    }

    #[test]
    fn compensating_forfeits_a_power_of_two_fraction_and_average_none() {
        let e = epoch(1000.0, 0.3); // rounds down to 1/4
        assert_eq!(e.frac, 0.25);
        assert_eq!(e.forfeit_at(100, 200, 9_000_000), 2); // 8 late beyond the first: 2
        assert_eq!(epoch(1000.0, 0.0).forfeit_at(100, 200, 9_000_000), 0);
        assert_eq!(epoch(1000.0, 1.5).forfeit_at(100, 200, 9_000_000), 0);
    }

    #[test]
    fn burst_allowance_spaces_a_backlog_at_strict_times_the_rate() {
        let mut e = epoch(1000.0, 2.0);
        // The lease script set the anchor so ticket 110 (slot 11 ms) starts at 20 ms.
        e.anchor = Some(20_000_000 - 5_000_000);
        assert_eq!(e.earliest(110), 20_000_000);
        assert_eq!(e.earliest(111), 20_500_000);
        // Caught up: the slot wins again.
        assert_eq!(e.earliest(150), e.slot(150));
    }

    #[test]
    fn lease_size_serves_about_a_millisecond_of_the_share() {
        assert_eq!(lease_size(30_000.0, 3, 1_000_000), 10);
        assert_eq!(lease_size(30_000.0, 1, 1_000_000), 30);
        assert_eq!(lease_size(10.0, 3, 1_000_000), 1);
        assert_eq!(lease_size(1e9, 1, 1_000_000), 4096);
    }

    #[test]
    fn exact_round_trips_the_double() {
        for x in [1e9 / 30_000.0, 1e9 / 7.0, 0.1, 1e15 / 3.0] {
            assert_eq!(exact(x).parse::<f64>().ok(), Some(x));
        }
    }
}
