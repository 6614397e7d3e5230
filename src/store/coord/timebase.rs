//! The time base: how this process maps its clock to the schedule's time.
//!
//! Every reply of a script carries the server's time since the schedule's origin.
//! A call that left at local `t0` and came back at `t1` with server time `s` gives
//! the offset `s - (t0 + t1) / 2`, off by at most half the round trip (plus the 1 µs
//! resolution of `TIME`). The time base keeps the sample whose bound, aged by an
//! allowance for the two clocks' drift, is smallest: a quiet round trip is used until
//! a fresher one is as good.

use crate::nanos::Nanos;

/// The drift allowed between this clock and the server's, ns per second of a
/// sample's age (100 ppm, loose for NTP-disciplined clocks).
const DRIFT_PER_SEC: u64 = 100_000;

/// `TIME`'s resolution, ns.
const TIME_RESOLUTION: u64 = 1_000;

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    /// Server time minus local time, ns.
    offset: i64,
    /// Half the round trip plus the resolution, ns.
    error: u64,
    /// Local time it was taken at.
    at: Nanos,
}

impl Sample {
    fn aged_error(&self, now: Nanos) -> u64 {
        let age = now.saturating_sub(self.at);
        self.error + (age as u128 * DRIFT_PER_SEC as u128 / 1_000_000_000) as u64
    }
}

/// The offset in use and how it was chosen.
#[derive(Debug, Clone, Default)]
pub(super) struct TimeBase {
    best: Option<Sample>,
}

impl TimeBase {
    /// Offers a round trip that left at `t0`, came back at `t1` (local ns) and read
    /// `server` (schedule ns). Kept if its bound beats the aged bound of the one in
    /// use.
    pub(super) fn offer(&mut self, t0: Nanos, t1: Nanos, server: Nanos) {
        let t1 = t1.max(t0);
        let mid = t0 + (t1 - t0) / 2;
        let s = Sample {
            offset: server as i64 - mid as i64,
            error: (t1 - t0).div_ceil(2) + TIME_RESOLUTION,
            at: t1,
        };
        match self.best {
            Some(b) if b.aged_error(t1) <= s.error => {}
            _ => self.best = Some(s),
        }
    }

    /// Schedule time for local time `local`; `None` before the first sample.
    pub(super) fn to_schedule(&self, local: Nanos) -> Option<Nanos> {
        self.best.map(|b| (local as i64 + b.offset).max(0) as Nanos)
    }

    /// Schedule time of a signed local reading `local` (a slot `to_local` gave),
    /// at 0 the earliest: the inverse of [`to_local`](Self::to_local) while the
    /// offset is the same.
    pub(super) fn to_schedule_signed(&self, local: i64) -> Nanos {
        let offset = self.best.map_or(0, |b| b.offset);
        local.saturating_add(offset).max(0) as Nanos
    }

    /// Local time for schedule time `t`, signed: a slot from before this clock's
    /// origin (a schedule that runs behind, joined by a young process) is negative,
    /// never clamped to the origin, so the wait measured from it is the whole
    /// lateness.
    pub(super) fn to_local(&self, t: Nanos) -> i64 {
        let offset = self.best.map_or(0, |b| b.offset);
        (t as i64).saturating_sub(offset)
    }

    /// How far a reading may be off now, ns (0 before the first sample).
    pub(super) fn error(&self, now: Nanos) -> u64 {
        self.best.map_or(0, |b| b.aged_error(now))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_the_midpoint_and_the_error_half_the_round_trip() {
        let mut tb = TimeBase::default();
        assert_eq!(tb.to_schedule(5), None);
        // Left at 1000, back at 1200; the server read 50_100.
        tb.offer(1_000, 1_200, 50_100);
        assert_eq!(tb.to_schedule(1_100), Some(50_100));
        assert_eq!(tb.to_local(50_100), 1_100);
        assert_eq!(tb.error(1_200), 100 + TIME_RESOLUTION);
    }

    /// Issue 23, item 6: a process that joined a schedule running behind clamped
    /// older slots to its own clock's zero, so its waits were its uptime.
    #[test]
    fn a_slot_before_this_clocks_origin_stays_negative() {
        let mut tb = TimeBase::default();
        // This clock is 1 ms old; the schedule is 10 s old.
        tb.offer(1_000_000, 1_000_000, 10_000_000_000);
        assert_eq!(tb.to_local(10_000_000_000), 1_000_000);
        // A slot 1.35 s behind: 1.349 s before this clock's zero.
        assert_eq!(tb.to_local(8_650_000_000), -1_349_000_000);
    }

    #[test]
    fn a_tighter_sample_replaces_a_looser_one_and_age_loosens_the_kept_one() {
        let mut tb = TimeBase::default();
        tb.offer(0, 400_000, 1_000_000); // error 201 µs
        tb.offer(1_000_000, 1_020_000, 1_800_000); // error 11 µs: taken
        assert_eq!(tb.to_schedule(1_010_000), Some(1_800_000));
        // A looser one soon after is not taken.
        tb.offer(2_000_000, 2_100_000, 9_999_999);
        assert_eq!(tb.to_schedule(1_010_000), Some(1_800_000));
        // 10 s later the kept one has aged by 1 ms: a 50 µs one is better.
        let later = 10_000_000_000;
        assert_eq!(tb.error(later), 11_000 + 999_898);
        tb.offer(later, later + 100_000, later + 790_000 + 50_000);
        assert_eq!(tb.error(later + 100_000), 51_000);
        assert_eq!(tb.to_schedule(later + 50_000), Some(later + 840_000));
    }
}
