//! The rates a verdict compares: the wait bound and the tolerance of an
//! on-schedule run, the achieved rate over the schedule's span, and the mean
//! target a schedule asked for over a window.

use crate::metrics::{Event, Snapshot, TimelineEntry};
use crate::nanos::{NANOS_PER_SEC, Nanos};
use crate::pace::{Arrivals, RateSpec, Scope};

/// The smallest wait p99 bound of an on-schedule run: 1 ms.
pub const MIN_WAIT_BOUND: Nanos = NANOS_PER_SEC / 1000;

/// The wait p99 under which a run at `target_rate` ops/s counts as on schedule:
/// one slot interval (1 / rate), or [`MIN_WAIT_BOUND`] (1 ms) if that is longer.
/// An op starting within one slot of its time, or within a millisecond (well
/// past a sleep's usual overshoot of tens of microseconds), is on time.
///
/// ```
/// assert_eq!(paceline::wait_bound(1000.0), 1_000_000);  // 1 ms
/// assert_eq!(paceline::wait_bound(100.0), 10_000_000);  // one slot, 10 ms
/// assert_eq!(paceline::wait_bound(1e6), 1_000_000);     // at least 1 ms
/// ```
pub fn wait_bound(target_rate: f64) -> Nanos {
    if target_rate > 0.0 {
        ((NANOS_PER_SEC as f64 / target_rate) as Nanos).max(MIN_WAIT_BOUND)
    } else {
        MIN_WAIT_BOUND
    }
}

/// How far the achieved rate may be from the target and still count as met: 1 %
/// of the target, or `edge + 1` ops over the window if that is more, with
/// `edge` the ops that may be in flight at an edge
/// ([`Figures::edge_ops`](crate::Figures::edge_ops): one per thread on the sync
/// runner, the ops in flight at the target rate on the async one). A window
/// counts the ops that finish in it: those in flight at either edge fall on
/// the other side, and the schedule's phase moves the count by one more.
///
/// ```
/// assert_eq!(paceline::rate_tolerance(1000.0, 10_000_000_000, 1), 10.0);  // 1 %
/// assert_eq!(paceline::rate_tolerance(50.0, 1_000_000_000, 1), 2.0);      // 2 ops in 1 s
/// assert_eq!(paceline::rate_tolerance(1000.0, 500_000_000, 4), 10.0);     // 5 ops in 0.5 s
/// ```
pub fn rate_tolerance(target_rate: f64, elapsed_nanos: Nanos, edge: usize) -> f64 {
    let edges = if elapsed_nanos > 0 {
        (edge as f64 + 1.0) * NANOS_PER_SEC as f64 / elapsed_nanos as f64
    } else {
        f64::INFINITY
    };
    (0.01 * target_rate).max(edges)
}

/// The achieved rate of a run (the whole run's [`Snapshot`], the totals).
///
/// Paced (`mean_target` above 0): its START rate over the schedule, the ops
/// started ([`Snapshot::starts`]: completed, failed, and cancelled in flight)
/// minus one over the span from the first slot (the window's start) to the
/// last start ([`Snapshot::last_start`]). n ops started at their slots 0, 1/r,
/// ..., (n - 1)/r give exactly r, however long the last ones then took (the
/// drain after the last start is no part of the schedule); a generator that
/// fell behind shows it, as its last start is late. Never above `mean_target`
/// (the release window may start an op a little before its slot).
///
/// A schedule that ended with cycles left (its duration's end, a stop, an
/// error: [`Snapshot::schedule_end`]) is judged over all of it: the span
/// runs at least to its last slot (its end less one slot at `mean_target`),
/// so ops that stopped starting before the end (a frozen server, a worker
/// held on a far slot) show as a shortfall, never as the rate kept (audit
/// p16, H8: a server frozen for the last 3 s of 5 read "99.9/s of 100/s").
/// A run that ran out of cycles keeps its span to the last start.
///
/// With fewer than 2 starts, or no start time known: ops over the run's time,
/// or over the slots they took (`ops / mean_target`) when that is longer.
/// Unpaced (`None`) or paused (`Some(0)`): ops over the run's time (the closed
/// loop's throughput). 0 for an empty window.
///
/// ```
/// use paceline::{Metrics, achieved_rate};
/// const MS: u64 = 1_000_000;
/// // 1000 ops at 1000/s, each 200 ms: the last starts at 999 ms, ends at 1.199 s.
/// let metrics = Metrics::new(0);
/// let mut rec = metrics.recorder();
/// for i in 0..1000 {
///     rec.set_start(i * MS);
///     rec.record(0, 200 * MS);
/// }
/// let t = metrics.snapshot(1_199 * MS);
/// assert_eq!(format!("{:.1}", t.rate()), "834.0"); // completions over the run's time
/// assert_eq!(achieved_rate(&t, Some(1000.0)), 1000.0);
/// assert_eq!(format!("{:.1}", achieved_rate(&t, None)), "834.0"); // unpaced
///
/// // 200 ops at 100/s, then none: a 5 s run ended by its duration kept 40/s.
/// let metrics = Metrics::new(0);
/// let mut rec = metrics.recorder();
/// for i in 0..200 {
///     rec.set_start(i * 10 * MS);
///     rec.record(0, MS);
/// }
/// metrics.schedule_ended(5_000 * MS);
/// metrics.snapshot(6_800 * MS);
/// let t = metrics.totals();
/// assert_eq!(format!("{:.1}", achieved_rate(&t, Some(100.0))), "39.9");
/// ```
pub fn achieved_rate(snap: &Snapshot, mean_target: Option<f64>) -> f64 {
    let target = mean_target.filter(|t| *t > 0.0 && t.is_finite());
    if let (Some(t), Some(last)) = (target, snap.last_start()) {
        let span = last
            .saturating_sub(snap.start())
            .max(schedule_span(snap, t));
        if snap.starts() >= 2 && span > 0 {
            let rate = (snap.starts() - 1) as f64 * NANOS_PER_SEC as f64 / span as f64;
            return rate.min(t);
        }
    }
    completion_rate(snap.ops(), snap.elapsed_nanos(), target)
}

/// The span a schedule that ended with cycles left ([`Snapshot::schedule_end`])
/// was due to start ops in, at a mean target of `target`: from its first slot to
/// one slot before its end (its last slot); 0 when it ran out of cycles.
fn schedule_span(snap: &Snapshot, target: f64) -> Nanos {
    let Some(end) = snap.schedule_end() else {
        return 0;
    };
    let slot = (NANOS_PER_SEC as f64 / target) as Nanos;
    end.saturating_sub(snap.start()).saturating_sub(slot)
}

/// The rate a run's own drawn slots asked for over its first `starts` slots, for
/// Poisson arrivals at a mean target of `mean_target`: `mean_target` times
/// `(starts - 1) / span`, with `span` the sum of the stream's first `starts - 1` draws in
/// mean gaps ([`Arrivals::span`]). A run whose every op started at its slot
/// achieves exactly this ([`achieved_rate`] with it as the cap), whatever the
/// draws; one that fell behind falls short of it by as much as its last start
/// is late. `None` for uniform slots (their rate is the target's), an unpaced or
/// paused run, or fewer than 2 starts.
///
/// Exact at a constant rate. Under rate changes, ramps and pauses the draws'
/// mean is applied to the mean target (gaps drawn at another rate weigh as if
/// drawn at the mean); tickets voided without a start (a pause's sleepers, a
/// dropped async op) shift the draws by one each.
///
/// ```
/// use paceline::{Arrivals, drawn_rate};
/// assert_eq!(drawn_rate(Arrivals::Uniform, 1000.0, 10_000), None);
/// let r = drawn_rate(Arrivals::Poisson { seed: 0 }, 1000.0, 200).unwrap();
/// assert!(r != 1000.0 && (r / 1000.0 - 1.0).abs() < 0.2, "{r}");
/// ```
pub fn drawn_rate(arrivals: Arrivals, mean_target: f64, starts: u64) -> Option<f64> {
    if arrivals == Arrivals::Uniform
        || starts < 2
        || mean_target.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
    {
        return None;
    }
    let gaps = starts - 1;
    let span = arrivals.span(gaps);
    (span > 0.0 && mean_target.is_finite()).then(|| mean_target * gaps as f64 / span)
}

/// [`drawn_rate`] for a run whose rate has `scope`, on `threads` threads, at
/// a total mean target of `mean_target` ([`total_rate`]'s), over `starts`
/// starts: the rate a run that kept every slot of the streams its schedules
/// drew achieves ([`achieved_rate`] with it as the cap).
///
/// - Activity scope: one schedule, the activity's own stream: [`drawn_rate`].
/// - Thread scope: each thread's schedule draws its own stream
///   (`arrivals.for_thread(t)` for the `t`-th thread the limiter saw, from 1),
///   never the activity's. With one thread, that thread's [`drawn_rate`].
///   With `n` threads, each at `mean_target / n` from the same first slot,
///   the cycles go to the slots in time order, so a run that kept every slot
///   started its `starts` ops at the first `starts` slots of all the threads'
///   streams merged: this is `starts - 1` over the last of them. (The merged
///   totals do not say how many ops each thread started; this needs no such
///   count. Splitting the starts evenly instead is off by over 1 % at 200 ops
///   a thread.) The streams are drawn again here: `starts` draws, O(starts
///   log n).
///
/// `None` where [`drawn_rate`] is (uniform slots, fewer than 2 starts, no
/// positive target). As for [`drawn_rate`], under rate changes the draws'
/// mean scales the mean target. A thread-scope run whose threads were
/// replaced (threads set lower and back) drew later threads' streams; this
/// takes the first `threads`'.
///
/// ```
/// use paceline::{Arrivals, Scope, drawn_rate, scoped_drawn_rate};
/// let p = Arrivals::Poisson { seed: 0 };
/// assert_eq!(
///     scoped_drawn_rate(p, Scope::Activity, 4, 1000.0, 200),
///     drawn_rate(p, 1000.0, 200)
/// );
/// assert_eq!(
///     scoped_drawn_rate(p, Scope::Thread, 1, 1000.0, 200),
///     drawn_rate(p.for_thread(1), 1000.0, 200)
/// );
/// assert_eq!(scoped_drawn_rate(Arrivals::Uniform, Scope::Thread, 4, 4000.0, 200), None);
/// ```
pub fn scoped_drawn_rate(
    arrivals: Arrivals,
    scope: Scope,
    threads: usize,
    mean_target: f64,
    starts: u64,
) -> Option<f64> {
    let n = threads.max(1) as u64;
    match scope {
        Scope::Activity => drawn_rate(arrivals, mean_target, starts),
        Scope::Thread if n == 1 => drawn_rate(arrivals.for_thread(1), mean_target, starts),
        Scope::Thread => {
            drawn_rate(arrivals, mean_target, starts)?;
            let seeds: Vec<u64> = (1..=n)
                .map(|t| match arrivals.for_thread(t) {
                    Arrivals::Poisson { seed } => seed,
                    Arrivals::Uniform => 0,
                })
                .collect();
            // (the slot's time in 2^-32 mean gaps of one thread, its thread, its draw)
            let mut next: std::collections::BinaryHeap<std::cmp::Reverse<(u128, usize, u64)>> = (0
                ..seeds.len())
                .map(|t| std::cmp::Reverse((0, t, 0)))
                .collect();
            let mut last = 0u128;
            for _ in 0..starts {
                let std::cmp::Reverse((at, t, j)) = next.pop()?;
                last = at;
                let gap = crate::pace::unit_gap(seeds[t], j) as u128;
                next.push(std::cmp::Reverse((at + gap, t, j + 1)));
            }
            let gaps = last as f64 / 4_294_967_296.0;
            let per_thread = mean_target / n as f64;
            (gaps > 0.0).then(|| (starts - 1) as f64 * per_thread / gaps)
        }
    }
}

/// The rate an activity's schedules ask for together at `spec` with `threads`
/// threads: the spec's rate in activity scope (one schedule shared by all),
/// `threads` times it in thread scope (each thread's schedule at the full
/// rate). The reports set the achieved rate, which counts every thread's ops,
/// against this; with the spec's rate alone a thread-scope run of 4 threads at
/// `1000,thread` read "achieved 1.00K/s of 1.00K/s" while it ran 4000 ops/s
/// (review p15).
///
/// ```
/// use paceline::{RateSpec, Scope, total_rate};
/// let spec = RateSpec::new(1000.0);
/// assert_eq!(total_rate(&spec, 4), 1000.0);
/// assert_eq!(total_rate(&spec.scope(Scope::Thread), 4), 4000.0);
/// ```
pub fn total_rate(spec: &RateSpec, threads: usize) -> f64 {
    match spec.scope_value() {
        Scope::Activity => spec.rate(),
        Scope::Thread => spec.rate() * threads as f64,
    }
}

/// Ops over the run's time, or over the slots they took (`ops / target`) when
/// that is longer: the fallback of [`achieved_rate`].
fn completion_rate(ops: u64, elapsed_nanos: Nanos, target: Option<f64>) -> f64 {
    let secs = elapsed_nanos as f64 / NANOS_PER_SEC as f64;
    let span = match target {
        Some(t) => secs.max(ops as f64 / t),
        None => secs,
    };
    if span > 0.0 { ops as f64 / span } else { 0.0 }
}

/// The note the engine marks for a rate set while paused, after the rate
/// (`rate 50/s kept for the resume`): the spec waits for the resume, and the
/// pause goes on.
pub(crate) const KEPT_FOR_RESUME: &str = "kept for the resume";

/// The note the engine marks when a pause begins, just after its rate-0 event.
pub(crate) const PAUSED_NOTE: &str = "paused";

/// The note the engine marks when a pause ends, just after its rate event.
pub(crate) const RESUMED_NOTE: &str = "resumed";

/// The mean rate a schedule asked for over `[start, end]`: `initial` at `start`, then
/// each rate change, ramp and pause of `timeline` (a rate of 0 is a pause), weighted by
/// how long it lasted. The verdict on a whole run compares the achieved rate with this,
/// not with the rate in force at the end (a run that ramped from 2K to 4K ops/s and
/// paused 2 s is not short of 4K/s).
///
/// A control pause (a rate event followed at the same time by the `paused`
/// note, up to the rate event followed by `resumed`) counts as 0 whatever
/// falls inside it: a rate set while paused (noted `rate R/s kept for the
/// resume`) and a ramp begun while paused change the rate the resume takes
/// up, not the pause (audit p17, H3: a `PUT` while paused was read as the
/// resume). A ramp begun while paused that has not ended at the resume runs
/// on from there.
///
/// ```
/// use paceline::{Event, TimelineEntry, mean_target_rate};
/// const S: u64 = 1_000_000_000;
/// let pause = [
///     TimelineEntry { at: 10 * S, event: Event::Rate { from: 1000.0, to: 0.0 } },
///     TimelineEntry { at: 12 * S, event: Event::Rate { from: 0.0, to: 1000.0 } },
/// ];
/// assert_eq!(mean_target_rate(1000.0, &pause, 0, 20 * S), 900.0);
/// // A ramp from 1000 to 3000 over 2 s, then 2 s at 3000.
/// let ramp = [TimelineEntry { at: 0, event: Event::Ramp { to: 3000.0, over: 2 * S } }];
/// assert_eq!(mean_target_rate(1000.0, &ramp, 0, 4 * S), 2500.0);
/// // Paused at 1 s, 50/s set at 2 s, resumed at 3 s: 0 from 1 s to 3 s.
/// let note = |at, text: &str| TimelineEntry { at, event: Event::Note(text.into()) };
/// let kept = [
///     TimelineEntry { at: S, event: Event::Rate { from: 100.0, to: 0.0 } },
///     note(S, "paused"),
///     note(2 * S, "rate 50/s kept for the resume"),
///     TimelineEntry { at: 3 * S, event: Event::Rate { from: 0.0, to: 50.0 } },
///     note(3 * S, "resumed"),
/// ];
/// assert_eq!(mean_target_rate(100.0, &kept, 0, 5 * S), 40.0);
/// ```
pub fn mean_target_rate(initial: f64, timeline: &[TimelineEntry], start: Nanos, end: Nanos) -> f64 {
    if end <= start {
        return initial;
    }
    // The rate from `from` at time `since`: constant, or a ramp to `to` over `over`.
    let mut rate = initial;
    let mut ramp: Option<(Nanos, f64, f64, Nanos)> = None;
    let at = |ramp: &Option<(Nanos, f64, f64, Nanos)>, rate: f64, t: Nanos| match ramp {
        Some((t0, r0, r1, d)) if *d > 0 => {
            let f = (t.saturating_sub(*t0) as f64 / *d as f64).min(1.0);
            r0 + (r1 - r0) * f
        }
        Some((_, _, r1, _)) => *r1,
        None => rate,
    };
    // The area under the rate over [a, b] (rate x nanoseconds).
    let area = |ramp: &Option<(Nanos, f64, f64, Nanos)>, rate: f64, a: Nanos, b: Nanos| {
        if b <= a {
            return 0.0;
        }
        match ramp {
            Some((t0, _, r1, d)) => {
                let knee = t0.saturating_add(*d).clamp(a, b);
                let linear = (at(ramp, rate, a) + at(ramp, rate, knee)) / 2.0 * (knee - a) as f64;
                linear + r1 * (b - knee) as f64
            }
            None => rate * (b - a) as f64,
        }
    };
    // The event after the `i`-th is the note `text` at the same time.
    let noted = |i: usize, text: &str| {
        timeline.get(i + 1).is_some_and(|n| {
            n.at == timeline[i].at && matches!(&n.event, Event::Note(t) if t == text)
        })
    };
    // Inside a control pause: the rate and ramp are the schedule's, kept for the
    // resume; the pause itself asks for nothing.
    let mut paused = false;
    let mut total = 0.0;
    let mut t = start;
    for (i, e) in timeline.iter().enumerate() {
        let when = e.at.clamp(start, end);
        match &e.event {
            Event::Rate { to, .. } => {
                if !paused {
                    total += area(&ramp, rate, t, when);
                }
                t = when;
                if !paused && noted(i, PAUSED_NOTE) {
                    // A pause cancels a ramp where it stands.
                    rate = at(&ramp, rate, e.at);
                    ramp = None;
                    paused = true;
                } else if paused && noted(i, RESUMED_NOTE) {
                    let ramping =
                        matches!(ramp, Some((t0, _, _, d)) if t0.saturating_add(d) > e.at);
                    if !ramping {
                        rate = *to;
                        ramp = None;
                    }
                    paused = false;
                } else {
                    rate = *to;
                    ramp = None;
                }
            }
            Event::Ramp { to, over } => {
                if !paused {
                    total += area(&ramp, rate, t, when);
                }
                t = when;
                let from = at(&ramp, rate, e.at);
                ramp = Some((e.at, from, *to, *over));
                rate = from;
            }
            Event::Note(note) if paused => {
                if let Some(kept) = kept_rate(note) {
                    // A rate set while paused cancels a ramp and is the rate
                    // the resume takes up.
                    rate = kept;
                    ramp = None;
                }
            }
            _ => {}
        }
    }
    if !paused {
        total += area(&ramp, rate, t, end);
    }
    total / (end - start) as f64
}

/// The rate of a `rate R/s kept for the resume` note.
fn kept_rate(note: &str) -> Option<f64> {
    let rest = note.strip_prefix("rate ")?;
    let (r, tail) = rest.split_once("/s ")?;
    (tail == KEPT_FOR_RESUME).then(|| r.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::mean_target_rate;
    use crate::metrics::{Event, TimelineEntry};
    const S: u64 = 1_000_000_000;
    /// Audit p17, H3: a ramp begun while paused changes the rate the resume takes
    /// up, never the pause: 100/s, paused at 1 s, `200 over 1s` at 1.3 s, resumed
    /// at 3.3 s, to 5 s: (100 x 1 + 200 x 1.7) / 5 = 88/s, not 149/s.
    #[test]
    fn p17_h3_a_ramp_begun_while_paused_starts_nothing_before_the_resume() {
        let note = |at, text: &str| TimelineEntry {
            at,
            event: Event::Note(text.into()),
        };
        let rate = |at, from, to| TimelineEntry {
            at,
            event: Event::Rate { from, to },
        };
        const MS: u64 = 1_000_000;
        let mut timeline = vec![
            rate(S, 100.0, 0.0),
            note(S, "paused"),
            TimelineEntry {
                at: 1_300 * MS,
                event: Event::Ramp { to: 200.0, over: S },
            },
            note(2_300 * MS, "ramp done"),
            rate(3_300 * MS, 0.0, 200.0),
            note(3_300 * MS, "resumed"),
        ];
        let mean = mean_target_rate(100.0, &timeline, 0, 5 * S);
        assert!((mean - 88.0).abs() < 1e-9, "{mean}");
        assert_eq!(
            mean_target_rate(100.0, &timeline, 1_100 * MS, 3_300 * MS),
            0.0
        );
        // A ramp over 4 s still running at the resume (at 150/s there) runs on to
        // 200/s at 5.3 s: 100 x 1 + (150 + 192.5) / 2 x 1.7, over 5 s.
        timeline[2].event = Event::Ramp {
            to: 200.0,
            over: 4 * S,
        };
        timeline.remove(3);
        timeline[3] = rate(3_300 * MS, 0.0, 150.0);
        let mean = mean_target_rate(100.0, &timeline, 0, 5 * S);
        let want = (100.0 + (150.0 + 192.5) / 2.0 * 1.7) / 5.0;
        assert!((mean - want).abs() < 1e-9, "{mean} != {want}");
        // A rate set while paused cancels the ramp: the resume's rate holds.
        timeline.insert(3, note(2 * S, "rate 50/s kept for the resume"));
        timeline[4] = rate(3_300 * MS, 0.0, 50.0);
        let mean = mean_target_rate(100.0, &timeline, 0, 5 * S);
        assert!((mean - (100.0 + 50.0 * 1.7) / 5.0).abs() < 1e-9, "{mean}");
    }
}
