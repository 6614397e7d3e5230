//! Membership and the spec: the heartbeat (membership, claims' watermarks, counts,
//! the spec's version), the listener of the pub/sub nudge, reading the spec and
//! telling the engine what changed, and changing it for every process.

use super::calls::{float, num};
use super::pacing::Ledger;
use super::session::{
    BEAT_EVERY, CLAIM_LEASE_US, Coordination, HORIZON, Known, LISTEN_TIMEOUT, MEMBER_TTL_US, POLL,
};
use super::slots::{exact, forfeit_fraction};
use super::starts::{Sums, global_rates};
use crate::engine::Remote;
use crate::pace::{RateSpec, Verb};
use crate::sync::threads::{self, Arc, Ordering};
use std::ops::Range;

impl Coordination {
    /// This process came back after being pruned while alive: every ticket it held
    /// is void (the prune counted them missed), and the timeline says so. The
    /// tickets are voided before the membership counts as renewed, so no worker
    /// grants one of them.
    fn came_back(&self, sent: u64, cycles_left: u64) {
        let held = {
            let mut tk = threads::lock(&self.tickets);
            let n = tk.void_all();
            self.renewed_at.fetch_max(sent, Ordering::Relaxed);
            n
        };
        self.missed.fetch_add(held, Ordering::Relaxed);
        Ledger::add(&self.ledger.missed, held);
        self.rejoins.fetch_add(1, Ordering::Relaxed);
        self.refill.notify();
        self.events.send(Remote::Note(format!(
            "pruned from the shared schedule {} while alive (no heartbeat for over {} s: \
             the process was stopped or starved) and joined it again: the {held} tickets \
             it held were counted missed, {cycles_left} cycles of claims others took over \
             are theirs",
            self.url,
            MEMBER_TTL_US / 1_000_000
        )));
    }

    /// Reads the spec in force; tells the engine what changed when `tell`.
    pub(super) fn refresh_spec(&self, tell: bool) -> Result<(), String> {
        let r = self.call(&self.scripts.spec, None, &self.args([]), Some(9))?;
        let marked = r.get(10).is_none_or(|m| m != "0");
        let ver = num(&r, 1);
        let mut k = threads::lock(&self.known);
        if ver <= k.ver {
            return Ok(());
        }
        let rate = float(&r, 5);
        let strict = float(&r, 7);
        let spec = RateSpec::try_new(rate)
            .ok()
            .and_then(|s| s.try_strictness(strict).ok())
            .unwrap_or(k.spec);
        let paused = r.get(3).is_some_and(|s| s == "1");
        let new = Known {
            ver,
            pause_ver: if paused && !k.paused {
                ver
            } else {
                k.pause_ver
            },
            paced: r.get(2).is_some_and(|s| s == "1"),
            paused: r.get(3).is_some_and(|s| s == "1"),
            stopped: r.get(4).is_some_and(|s| s == "1"),
            spec,
        };
        let old = std::mem::replace(&mut *k, new);
        drop(k);
        if tell {
            let event = if new.stopped && !old.stopped {
                Some(Remote::Stop)
            } else if new.paused && !old.paused {
                Some(Remote::Pause)
            } else if !new.paused && old.paused {
                Some(Remote::Resume(spec))
            } else if new.paced
                && (!old.paced
                    || old.spec.rate() != spec.rate()
                    || old.spec.strictness_value() != spec.strictness_value())
            {
                Some(Remote::Spec(spec, marked))
            } else {
                None
            };
            if let Some(e) = event {
                self.events.send(e);
            }
        }
        // Paused workers look again; a worker waiting for a slot keeps its ticket.
        self.signal.notify();
        self.refill.notify();
        Ok(())
    }

    /// The spec in force, as last read, and whether the schedule is paced.
    pub(crate) fn spec(&self) -> (RateSpec, bool) {
        let k = threads::lock(&self.known);
        (k.spec, k.paced)
    }

    /// Changes the schedule's spec for every process: a rate of 0 pauses, a
    /// positive rate after a pause resumes. A spec already in force in the store
    /// changes nothing (the script compares).
    pub(crate) fn set_spec(&self, spec: RateSpec, marked: bool) {
        let kind = {
            let k = threads::lock(&self.known);
            if k.stopped {
                return;
            }
            if spec.rate() == 0.0 {
                if k.paused {
                    return;
                }
                "pause"
            } else if spec.verb_value() == Verb::Restart {
                "restart"
            } else {
                // Sent even when it equals the spec this process last heard of:
                // that may be stale (a change made elsewhere, its nudge not yet
                // here), and the script compares with the store's (issue 23).
                "spec"
            }
        };
        self.change(kind, spec, marked);
    }

    /// Stops the schedule for every process.
    pub(crate) fn stop_everywhere(&self) {
        let spec = threads::lock(&self.known).spec;
        self.change("stop", spec, true);
    }

    pub(super) fn change(&self, kind: &str, spec: RateSpec, marked: bool) {
        let rate = spec.rate().max(f64::MIN_POSITIVE);
        let args = self.args([
            kind.to_string(),
            exact(spec.rate()),
            exact(1e9 / rate),
            exact(spec.strictness_value()),
            exact(forfeit_fraction(spec.strictness_value())),
            HORIZON.to_string(),
            self.channel.clone(),
            u8::from(marked).to_string(),
        ]);
        let one = threads::lock(&self.changing);
        let got = self.call(&self.scripts.change, Some("change"), &args, None);
        drop(one);
        if let Ok(r) = got {
            let ver = num(&r, 1);
            let mut k = threads::lock(&self.known);
            if r.first().is_some_and(|s| s == "ok") && ver > k.ver {
                k.ver = ver;
                match kind {
                    "stop" => k.stopped = true,
                    "pause" => {
                        k.paused = true;
                        k.pause_ver = ver;
                    }
                    _ => {
                        k.paused = false;
                        k.paced = true;
                        k.spec = spec.verb(Verb::Start);
                    }
                }
            }
            drop(k);
            self.signal.notify();
            self.refill.notify();
        }
    }

    pub(super) fn beat_loop(self: Arc<Self>) {
        while !self.halt.load(Ordering::Relaxed) {
            let g = self.beat.generation();
            self.beat.wait_change_for(g, BEAT_EVERY);
            if self.halt.load(Ordering::Relaxed) || self.lost().is_some() {
                return;
            }
            self.heartbeat(false);
        }
    }

    pub(super) fn listen_loop(self: Arc<Self>) {
        while !self.halt.load(Ordering::Relaxed) && self.lost().is_none() {
            let Ok(mut conn) = self.pool.dedicated(LISTEN_TIMEOUT) else {
                std::thread::sleep(POLL);
                continue;
            };
            let mut sub = conn.as_pubsub();
            if sub.subscribe(&self.channel).is_err() {
                std::thread::sleep(POLL);
                continue;
            }
            // A nudge missed while (re)subscribing is found here.
            let _ = self.refresh_spec(true);
            loop {
                if self.halt.load(Ordering::Relaxed) || self.lost().is_some() {
                    return;
                }
                match sub.get_message() {
                    Ok(_) => {
                        let _ = self.refresh_spec(true);
                    }
                    Err(e) if e.is_timeout() => {}
                    Err(_) => break,
                }
            }
        }
    }

    /// One heartbeat: renews the membership and claims (or releases them when
    /// `leaving`, with the unused tickets), adds this process's counts, and reads the
    /// global ones and the spec's version.
    pub(super) fn heartbeat(&self, leaving: bool) {
        let progress = threads::lock(&self.chunks).chunks.progress();
        // Tickets left over when the cycles ran out, or when the schedule was
        // stopped everywhere, are not slots anyone missed: the schedule has no op
        // left for them. Left over while others go on (an interrupt here), they go
        // back, or count as missed when others leased after.
        let over = self.is_cycles_done() || threads::lock(&self.known).stopped;
        let unused = if leaving {
            let unused = threads::lock(&self.tickets).drain_unused();
            if over {
                // Void: the schedule has no op left for them.
                Ledger::add(&self.ledger.voided, span(&unused));
                Vec::new()
            } else {
                unused
            }
        } else {
            Vec::new()
        };
        let done = self.done.load(Ordering::Relaxed);
        let missed = self.missed_here.load(Ordering::Relaxed);
        let mut reported = threads::lock(&self.reported);
        // The count of tickets used, read under the tickets lock, where workers
        // change it. It is settled when this process is in doubt of its
        // membership (no worker uses a ticket then) or leaving (none runs): only
        // then may the store bring it back from a prune with it.
        let sent = self.clock.now();
        let (used, settled) = {
            let _tk = threads::lock(&self.tickets);
            (
                self.used.load(Ordering::Relaxed),
                leaving || self.in_doubt(),
            )
        };
        // Every start so far (leaving, every worker has ended: all of them).
        let (starts, last_start) = self.starts.read();
        let mut args = vec![
            self.id.to_string(),
            MEMBER_TTL_US.to_string(),
            CLAIM_LEASE_US.to_string(),
            (done - reported.0).to_string(),
            (missed - reported.1).to_string(),
            u8::from(leaving).to_string(),
            self.last_end().to_string(),
            used.to_string(),
            u8::from(settled).to_string(),
            progress.len().to_string(),
        ];
        for (key, upto) in &progress {
            args.extend([key.to_string(), upto.to_string()]);
        }
        args.push(unused.len().to_string());
        for r in &unused {
            args.extend([r.start.to_string(), r.end.to_string()]);
        }
        // Leaving: each claim goes back as the pieces not run (see `Chunks::unrun`).
        let pieces: Vec<(u64, Range<u64>)> = if leaving {
            let unrun = threads::lock(&self.chunks).chunks.unrun();
            unrun
                .into_iter()
                .flat_map(|(key, rs)| rs.into_iter().map(move |r| (key, r)))
                .collect()
        } else {
            Vec::new()
        };
        args.push(pieces.len().to_string());
        for (key, r) in &pieces {
            args.extend([key.to_string(), r.start.to_string(), r.end.to_string()]);
        }
        args.extend([
            starts.saturating_sub(reported.2).to_string(),
            last_start.to_string(),
        ]);
        let Ok(r) = self.call(&self.scripts.beat, Some("beat"), &self.args(args), Some(7)) else {
            // Handed to a store that is gone: nothing took them.
            Ledger::add(&self.ledger.voided, span(&unused));
            return;
        };
        if r.first().is_some_and(|x| x == "pruned") {
            // Pruned while frozen, and the count was not settled when read (the
            // freeze came between the read and the send): the workers are in doubt
            // now, and the next heartbeat, at once, carries a settled count. (Not
            // in doubt: the store's clock and this one disagree; at the usual pace.)
            drop(reported);
            if self.in_doubt() {
                self.beat.notify();
            }
            return;
        }
        *reported = (done, missed, starts);
        drop(reported);
        let n_lost = num(&r, 11) as usize;
        let lost: Vec<u64> = r
            .iter()
            .skip(12)
            .take(n_lost)
            .filter_map(|k| k.parse().ok())
            .collect();
        // Of the tickets handed back, those the store gave back to the schedule;
        // it counted the rest missed (others had leased past them, or the prune
        // counted them).
        let given = num(&r, 12 + n_lost).min(span(&unused));
        Ledger::add(&self.ledger.given_back, given);
        Ledger::add(&self.ledger.missed, span(&unused) - given);
        let dropped = {
            let mut ch = threads::lock(&self.chunks);
            ch.chunks.reported(&progress);
            ch.chunks.drop_keys(&lost)
        };
        if num(&r, 10) == 1 && !leaving {
            self.came_back(sent, dropped);
        } else {
            self.renewed_at.fetch_max(sent, Ordering::Relaxed);
        }
        if settled {
            self.signal.notify();
        }
        let ver = num(&r, 1);
        {
            let mut s = threads::lock(&self.status);
            s.processes_live = num(&r, 2);
            s.processes_seen = num(&r, 3);
            s.global_completed = num(&r, 4);
            s.global_missed = num(&r, 5);
            s.rerun_cycles = num(&r, 6);
            let sums = sums_of(&r);
            s.global_started = sums.starts;
            (s.global_achieved, s.global_completion_rate) = global_rates(&sums);
        }
        if !leaving && ver > threads::lock(&self.known).ver {
            let _ = self.refresh_spec(true);
        }
    }
}

/// The store's sums in a heartbeat's reply (see `BEAT`): the completed cycles,
/// the latest op end and, after `given`, the schedule's first slot (empty
/// before its first lease), every process's starts and the latest start.
pub(super) fn sums_of(r: &[String]) -> Sums {
    let at = 13 + num(r, 11) as usize;
    Sums {
        completed: num(r, 4),
        last_end: num(r, 9),
        first_slot: r.get(at).and_then(|f| f.parse().ok()),
        starts: num(r, at + 1),
        last_start: num(r, at + 2),
    }
}

/// How many tickets `ranges` hold.
fn span(ranges: &[Range<u64>]) -> u64 {
    ranges.iter().map(|r| r.end.saturating_sub(r.start)).sum()
}
