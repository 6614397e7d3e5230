//! `paceline calibrate`: measure this machine's timers and recommend a waiting
//! strategy.
//!
//! In about two seconds it measures the cost of a clock read (paceline's
//! [`MonotonicClock`] and std's `Instant`), how late OS sleeps wake under the
//! default timer slack, how close the `spin_sleep` preset lands, and how well the
//! pacer holds a range of spacings (slices) with the `adaptive`, `spin_sleep` and
//! `spin` presets. From these, [`recommend`] picks a preset; it is a pure function
//! of the [`Measurements`], so it is tested on fabricated numbers.

use super::report::units;
use paceline::{Clock, MonotonicClock, Nanos, RateLimiter, RateSpec, Signal, Waiting, nanos};
use std::fmt;
use std::time::{Duration, Instant};

/// A spacing "holds" when the pacer's p99 wait stays at or under this…
pub const LATENESS_BOUND: Nanos = 100_000;
/// …and the achieved rate is at least this fraction of the target.
pub const RATE_FLOOR: f64 = 0.98;

/// The spacings tried, finest first.
pub const SLICES: [Nanos; 9] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 1_000_000,
];

/// The requested sleeps measured.
pub const SLEEPS: [Nanos; 3] = [10_000, 100_000, 1_000_000];

/// The waiting presets of [`paceline::Waiting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `Waiting::spin_sleep()`: sleep, then spin the last 100 µs.
    SpinSleep,
    /// `Waiting::spin()`: spin the whole wait.
    Spin,
    /// `Waiting::adaptive()`: the default; sleep, release ops within 50 µs at once.
    Adaptive,
}

impl Strategy {
    /// The preset's name, as configuration spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::SpinSleep => "spin_sleep",
            Self::Spin => "spin",
            Self::Adaptive => "adaptive",
        }
    }

    /// The preset itself.
    pub fn waiting(self) -> Waiting {
        match self {
            Self::SpinSleep => Waiting::spin_sleep(),
            Self::Spin => Waiting::spin(),
            Self::Adaptive => Waiting::adaptive(),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How late a kind of sleep woke, for one requested duration (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SleepAccuracy {
    /// The duration asked for.
    pub requested: Nanos,
    /// Median lateness.
    pub p50_late: Nanos,
    /// 99th percentile lateness.
    pub p99_late: Nanos,
    /// Worst lateness.
    pub max_late: Nanos,
}

/// The pacer at one spacing with one preset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacerTrial {
    /// The preset.
    pub strategy: Strategy,
    /// The spacing, nanoseconds (1e9 / rate).
    pub slice: Nanos,
    /// Achieved rate over target rate.
    pub achieved: f64,
    /// The 99th percentile of the grants' waits.
    pub p99_wait: Nanos,
}

impl PacerTrial {
    /// Whether the pacer held this spacing: p99 wait within [`LATENESS_BOUND`] and
    /// the rate within [`RATE_FLOOR`].
    pub fn holds(&self) -> bool {
        self.p99_wait <= LATENESS_BOUND && self.achieved >= RATE_FLOOR
    }
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurements {
    /// Nanoseconds per `MonotonicClock::now`.
    pub clock_read: f64,
    /// Nanoseconds per `Instant::now`.
    pub instant_read: f64,
    /// `std::thread::sleep` under the default timer slack.
    pub os_sleep: Vec<SleepAccuracy>,
    /// The `spin_sleep` preset waiting on the real clock.
    pub spin_sleep: Vec<SleepAccuracy>,
    /// The pacer with each measured preset at each spacing.
    pub pacer: Vec<PacerTrial>,
}

impl Measurements {
    /// The finest spacing `strategy` holds with every coarser measured spacing held
    /// too; `None` if it does not hold even the coarsest, or was not measured.
    pub fn finest_held(&self, strategy: Strategy) -> Option<Nanos> {
        let mut trials: Vec<&PacerTrial> = self
            .pacer
            .iter()
            .filter(|t| t.strategy == strategy)
            .collect();
        trials.sort_by_key(|t| std::cmp::Reverse(t.slice));
        let mut finest = None;
        for t in trials {
            if !t.holds() {
                break;
            }
            finest = Some(t.slice);
        }
        finest
    }
}

/// The advice.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// The preset to use.
    pub strategy: Strategy,
    /// The finest spacing that preset held here.
    pub finest_slice: Option<Nanos>,
    /// Why, in one sentence.
    pub reason: String,
    /// Other things worth knowing (a slow clock, coarse sleeps).
    pub notes: Vec<String>,
}

/// Clock reads slower than this make spinning and fine spacings costly.
const SLOW_CLOCK_NS: f64 = 100.0;
/// OS sleeps this late (p99, for 100 µs) are coarse.
const COARSE_SLEEP_NS: Nanos = 500_000;

/// Picks a preset from the measurements:
///
/// 1. `spin` when it holds a spacing more than twice as fine as any other preset:
///    only spinning keeps up here, at a core per waiting thread;
/// 2. otherwise `spin_sleep` when it holds a finer spacing than `adaptive`: sleeps
///    wake too late here, and spinning the last 100 µs fixes that;
/// 3. otherwise `adaptive`, the default: nothing is gained by burning CPU.
///
/// Notes flag a slow clock and coarse sleeps.
pub fn recommend(m: &Measurements) -> Recommendation {
    // Whether `a` is a finer spacing than `b` by more than `factor`.
    let finer = |a: Option<Nanos>, b: Option<Nanos>, factor: u64| match (a, b) {
        (Some(a), Some(b)) => a.saturating_mul(factor) < b,
        (Some(_), None) => true,
        _ => false,
    };
    let adaptive = m.finest_held(Strategy::Adaptive);
    let spin_sleep = m.finest_held(Strategy::SpinSleep);
    let spin = m.finest_held(Strategy::Spin);
    let best_without_spin = if finer(spin_sleep, adaptive, 1) {
        spin_sleep
    } else {
        adaptive
    };
    let show = |s: Option<Nanos>| s.map_or("no measured spacing".to_string(), units::duration);
    let (strategy, finest_slice, reason) = if finer(spin, best_without_spin, 2) {
        (
            Strategy::Spin,
            spin,
            format!(
                "only spinning holds spacings down to {} here (spin_sleep: {}, adaptive: {}); \
                 it keeps a core busy per waiting thread, so use it only for such spacings",
                show(spin),
                show(spin_sleep),
                show(adaptive)
            ),
        )
    } else if finer(spin_sleep, adaptive, 1) {
        (
            Strategy::SpinSleep,
            spin_sleep,
            format!(
                "sleeps wake late here: spin_sleep holds spacings down to {} where adaptive \
                 holds {}, at up to a core of CPU per waiting thread",
                show(spin_sleep),
                show(adaptive)
            ),
        )
    } else {
        let reason = match adaptive {
            Some(s) => format!(
                "the default holds spacings down to {} here; the spinning presets gain \
                 little over it and cost CPU",
                units::duration(s)
            ),
            None => {
                "no preset held the measured spacings; the default costs the least CPU".to_string()
            }
        };
        (Strategy::Adaptive, adaptive, reason)
    };
    let mut notes = Vec::new();
    if m.clock_read > SLOW_CLOCK_NS {
        notes.push(format!(
            "reading the clock costs {:.0} ns here (no invariant TSC?): every op pays it, and \
             spacings under a few microseconds cost much CPU",
            m.clock_read
        ));
    }
    if let Some(s) = m.os_sleep.iter().find(|s| s.requested == 100_000) {
        if s.p99_late > COARSE_SLEEP_NS {
            notes.push(format!(
                "OS sleeps are coarse here (a 100µs sleep wakes up to {} late at p99): avoid \
                 the sleep preset for spacings under {}",
                units::duration(s.p99_late),
                units::duration(s.p99_late.saturating_mul(10))
            ));
        }
    }
    Recommendation {
        strategy,
        finest_slice,
        reason,
        notes,
    }
}

/// A calibration: the measurements and the advice drawn from them.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// What was measured.
    pub measurements: Measurements,
    /// What to use.
    pub recommendation: Recommendation,
}

/// How long the measuring may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Clock reads per clock measured.
    pub reads: u32,
    /// Samples per requested sleep.
    pub sleep_samples: u32,
    /// How long each pacer trial runs.
    pub trial: Duration,
}

impl Budget {
    /// About two seconds in all.
    pub const FULL: Budget = Budget {
        reads: 1_000_000,
        sleep_samples: 60,
        trial: Duration::from_millis(50),
    };
}

/// The pacer presets tried.
const TRIED: [Strategy; 3] = [Strategy::Adaptive, Strategy::SpinSleep, Strategy::Spin];

/// Measures this machine and recommends a preset. Runs the waiting on helper
/// threads, so the calling thread's timer slack is left alone.
pub fn calibrate(budget: Budget) -> Calibration {
    let clock = MonotonicClock::new();
    let clock_read = time_reads(budget.reads, || {
        std::hint::black_box(clock.now());
    });
    let instant_read = time_reads(budget.reads, || {
        std::hint::black_box(Instant::now());
    });
    let on_thread = |f: &(dyn Fn() -> Vec<SleepAccuracy> + Sync)| {
        std::thread::scope(|s| s.spawn(f).join().unwrap_or_default())
    };
    let os_sleep = on_thread(&|| {
        SLEEPS
            .iter()
            .map(|&d| {
                measure_sleep(d, budget.sleep_samples, |d| {
                    let t = Instant::now();
                    std::thread::sleep(nanos::to_duration(d));
                    nanos::from_duration(t.elapsed())
                })
            })
            .collect()
    });
    let spin_sleep = on_thread(&|| {
        let clock = MonotonicClock::new();
        let (w, signal) = (Waiting::spin_sleep(), Signal::new());
        SLEEPS
            .iter()
            .map(|&d| {
                measure_sleep(d, budget.sleep_samples, |d| {
                    let start = clock.now();
                    clock.wait_until(start + d, &w, &signal) - start
                })
            })
            .collect()
    });
    let mut pacer = Vec::new();
    for strategy in TRIED {
        for slice in SLICES {
            let trial = std::thread::scope(|s| {
                s.spawn(|| pacer_trial(strategy, slice, budget.trial))
                    .join()
                    .ok()
            });
            pacer.extend(trial);
        }
    }
    let measurements = Measurements {
        clock_read,
        instant_read,
        os_sleep,
        spin_sleep,
        pacer,
    };
    Calibration {
        recommendation: recommend(&measurements),
        measurements,
    }
}

/// Nanoseconds per call of `read`, over `n` calls.
fn time_reads(n: u32, read: impl Fn()) -> f64 {
    let n = n.max(1);
    let t = Instant::now();
    for _ in 0..n {
        read();
    }
    t.elapsed().as_nanos() as f64 / f64::from(n)
}

/// Sleeps `requested` `samples` times with `sleep` (which returns how long it took).
fn measure_sleep(requested: Nanos, samples: u32, sleep: impl Fn(Nanos) -> Nanos) -> SleepAccuracy {
    let mut late: Vec<Nanos> = (0..samples.max(1))
        .map(|_| sleep(requested).saturating_sub(requested))
        .collect();
    late.sort_unstable();
    SleepAccuracy {
        requested,
        p50_late: percentile(&late, 0.50),
        p99_late: percentile(&late, 0.99),
        max_late: late.last().copied().unwrap_or(0),
    }
}

/// The `q` quantile of sorted values (nearest rank); 0 when empty.
fn percentile(sorted: &[Nanos], q: f64) -> Nanos {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Runs one pacer on this thread at `slice` spacing for about `run`.
fn pacer_trial(strategy: Strategy, slice: Nanos, run: Duration) -> PacerTrial {
    let rate = 1e9 / slice as f64;
    let limiter = RateLimiter::builder(RateSpec::new(rate))
        .waiting(strategy.waiting())
        .build();
    let ops = (nanos::from_duration(run) / slice).max(20);
    let mut waits = Vec::with_capacity(ops as usize);
    let t = Instant::now();
    for _ in 0..ops {
        waits.push(limiter.acquire().wait_nanos());
    }
    let elapsed = t.elapsed().as_secs_f64();
    waits.sort_unstable();
    // The first op starts the schedule: `ops` ops span `ops - 1` slices.
    let achieved = if elapsed > 0.0 {
        ((ops - 1) as f64 / elapsed) / rate
    } else {
        1.0
    };
    PacerTrial {
        strategy,
        slice,
        achieved,
        p99_wait: percentile(&waits, 0.99),
    }
}

impl fmt::Display for Calibration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.measurements;
        writeln!(
            f,
            "clock read: MonotonicClock::now {:.1}ns, Instant::now {:.1}ns",
            m.clock_read, m.instant_read
        )?;
        for (title, rows) in [
            ("OS sleep (default timer slack)", &m.os_sleep),
            ("spin_sleep preset", &m.spin_sleep),
        ] {
            writeln!(f, "\n{title}: how late it woke")?;
            writeln!(
                f,
                "  {:<10}{:>10}{:>10}{:>10}",
                "requested", "p50", "p99", "max"
            )?;
            for s in rows.iter() {
                writeln!(
                    f,
                    "  {:<10}{:>10}{:>10}{:>10}",
                    units::duration(s.requested),
                    units::duration(s.p50_late),
                    units::duration(s.p99_late),
                    units::duration(s.max_late)
                )?;
            }
        }
        let strategies: Vec<Strategy> = TRIED
            .into_iter()
            .filter(|s| m.pacer.iter().any(|t| t.strategy == *s))
            .collect();
        writeln!(
            f,
            "\npacer: p99 wait and achieved rate by spacing (holds: p99 wait <= {}, rate >= {:.0}%)",
            units::duration(LATENESS_BOUND),
            RATE_FLOOR * 100.0
        )?;
        write!(f, "  {:<9}", "spacing")?;
        for s in &strategies {
            write!(f, "{:>22}", s.name())?;
        }
        writeln!(f)?;
        let mut slices: Vec<Nanos> = m.pacer.iter().map(|t| t.slice).collect();
        slices.sort_unstable();
        slices.dedup();
        for slice in slices {
            write!(f, "  {:<9}", units::duration(slice))?;
            for s in &strategies {
                match m
                    .pacer
                    .iter()
                    .find(|t| t.strategy == *s && t.slice == slice)
                {
                    Some(t) => write!(
                        f,
                        "{:>22}",
                        format!(
                            "{} {:.1}% {}",
                            units::duration(t.p99_wait),
                            t.achieved * 100.0,
                            if t.holds() { "ok" } else { "--" }
                        )
                    )?,
                    None => write!(f, "{:>22}", "")?,
                }
            }
            writeln!(f)?;
        }
        let held: Vec<String> = strategies
            .iter()
            .map(|&s| format!("{s} {}", held_text(m, s)))
            .collect();
        writeln!(f, "\nfinest spacing held: {}", held.join(", "))?;
        let r = &self.recommendation;
        writeln!(f, "recommended waiting: {} ({})", r.strategy, r.reason)?;
        writeln!(
            f,
            "  select it with: paceline run FILE --waiting {}",
            r.strategy
        )?;
        for n in &r.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}

/// The finest spacing `s` held, in words that agree with the table: a spacing
/// counts when it and every coarser one held, so when the coarsest missed but
/// finer ones held, say so rather than a bare "none".
fn held_text(m: &Measurements, s: Strategy) -> String {
    if let Some(slice) = m.finest_held(s) {
        return units::duration(slice);
    }
    let mut trials: Vec<&PacerTrial> = m.pacer.iter().filter(|t| t.strategy == s).collect();
    trials.sort_by_key(|t| std::cmp::Reverse(t.slice));
    let finer_held = trials.iter().filter(|t| t.holds()).map(|t| t.slice).min();
    match (trials.first(), finer_held) {
        (Some(coarsest), Some(finest)) => format!(
            "none in a row ({} missed, yet {} held: a hiccup? run it again)",
            units::duration(coarsest.slice),
            units::duration(finest)
        ),
        _ => "none".to_string(),
    }
}

#[cfg(test)]
#[path = "calibrate_tests.rs"]
mod tests;
