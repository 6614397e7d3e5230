//! `paceline calibrate`'s tests: the recommendation on fabricated measurements,
//! the report's text, the percentile rule, and one short real measurement.

use super::*;

fn sleep(requested: Nanos, p99_late: Nanos) -> SleepAccuracy {
    SleepAccuracy {
        requested,
        p50_late: p99_late / 2,
        p99_late,
        max_late: p99_late * 2,
    }
}

/// Trials for `strategy` holding every spacing from `finest` up (none when
/// `finest` is `None`); finer ones are 200 µs late.
fn trials(strategy: Strategy, finest: Option<Nanos>) -> Vec<PacerTrial> {
    SLICES
        .iter()
        .map(|&slice| {
            let ok = finest.is_some_and(|f| slice >= f);
            PacerTrial {
                strategy,
                slice,
                achieved: if ok { 1.0 } else { 0.9 },
                p99_wait: if ok { 20_000 } else { 200_000 },
            }
        })
        .collect()
}

fn measured(
    adaptive: Option<Nanos>,
    spin_sleep: Option<Nanos>,
    spin: Option<Nanos>,
) -> Measurements {
    let mut pacer = trials(Strategy::Adaptive, adaptive);
    pacer.extend(trials(Strategy::SpinSleep, spin_sleep));
    pacer.extend(trials(Strategy::Spin, spin));
    Measurements {
        clock_read: 15.0,
        instant_read: 25.0,
        os_sleep: vec![
            sleep(10_000, 60_000),
            sleep(100_000, 60_000),
            sleep(1_000_000, 60_000),
        ],
        spin_sleep: vec![
            sleep(10_000, 300),
            sleep(100_000, 300),
            sleep(1_000_000, 300),
        ],
        pacer,
    }
}

#[test]
fn the_default_when_it_holds_as_fine_as_anything() {
    let r = recommend(&measured(Some(2_000), Some(2_000), None));
    assert_eq!(
        (r.strategy, r.finest_slice),
        (Strategy::Adaptive, Some(2_000))
    );
    assert_eq!(
        r.reason,
        "the default holds spacings down to 2.00µs here; the spinning presets gain little \
         over it and cost CPU"
    );
    assert!(r.notes.is_empty());
}

#[test]
fn spin_sleep_when_sleeps_wake_late() {
    let r = recommend(&measured(Some(50_000), Some(5_000), Some(5_000)));
    assert_eq!(
        (r.strategy, r.finest_slice),
        (Strategy::SpinSleep, Some(5_000))
    );
    assert_eq!(
        r.reason,
        "sleeps wake late here: spin_sleep holds spacings down to 5.00µs where adaptive \
         holds 50.0µs, at up to a core of CPU per waiting thread"
    );
}

#[test]
fn spin_only_when_nothing_else_holds_as_fine() {
    let r = recommend(&measured(None, Some(100_000), Some(1_000)));
    assert_eq!((r.strategy, r.finest_slice), (Strategy::Spin, Some(1_000)));
    assert!(
        r.reason
            .contains("(spin_sleep: 100µs, adaptive: no measured spacing)"),
        "{}",
        r.reason
    );
}

#[test]
fn the_default_when_nothing_holds() {
    let r = recommend(&measured(None, None, None));
    assert_eq!((r.strategy, r.finest_slice), (Strategy::Adaptive, None));
    assert!(r.reason.starts_with("no preset held"));
}

#[test]
fn a_spacing_holds_only_if_every_coarser_one_does() {
    let mut m = measured(Some(1_000), None, None);
    // A hiccup at 100 µs: the finest held is what lies above it.
    if let Some(t) = m
        .pacer
        .iter_mut()
        .find(|t| t.strategy == Strategy::Adaptive && t.slice == 100_000)
    {
        t.p99_wait = LATENESS_BOUND + 1;
    }
    assert_eq!(m.finest_held(Strategy::Adaptive), Some(200_000));
    // A strategy with no trials holds nothing.
    m.pacer.retain(|t| t.strategy != Strategy::Spin);
    assert_eq!(m.finest_held(Strategy::Spin), None);
}

#[test]
fn a_coarse_hiccup_is_not_a_bare_none_beside_a_table_of_ok() {
    // Regression (issue 17): "finest spacing held: none" while the table
    // showed finer spacings held.
    let mut m = measured(Some(1_000), None, None);
    if let Some(t) = m
        .pacer
        .iter_mut()
        .find(|t| t.strategy == Strategy::Adaptive && t.slice == 1_000_000)
    {
        t.p99_wait = LATENESS_BOUND + 1;
    }
    assert_eq!(m.finest_held(Strategy::Adaptive), None);
    assert_eq!(
        held_text(&m, Strategy::Adaptive),
        "none in a row (1.00ms missed, yet 1.00µs held: a hiccup? run it again)"
    );
    assert_eq!(held_text(&m, Strategy::SpinSleep), "none");
}

#[test]
fn notes_flag_a_slow_clock_and_coarse_sleeps() {
    let mut m = measured(Some(10_000), Some(10_000), Some(10_000));
    m.clock_read = 450.0;
    m.os_sleep[1] = sleep(100_000, 1_200_000);
    let r = recommend(&m);
    assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
    assert!(r.notes[0].starts_with("reading the clock costs 450 ns here"));
    assert!(
        r.notes[1].contains("wakes up to 1.20ms late at p99"),
        "{}",
        r.notes[1]
    );
}

#[test]
fn the_rendering_has_every_section() {
    let m = measured(Some(2_000), Some(2_000), Some(1_000));
    let c = Calibration {
        recommendation: recommend(&m),
        measurements: m,
    };
    let want = "\
clock read: MonotonicClock::now 15.0ns, Instant::now 25.0ns

OS sleep (default timer slack): how late it woke
  requested        p50       p99       max
  10.0µs        30.0µs    60.0µs     120µs
  100µs         30.0µs    60.0µs     120µs
  1.00ms        30.0µs    60.0µs     120µs

spin_sleep preset: how late it woke
  requested        p50       p99       max
  10.0µs         150ns     300ns     600ns
  100µs          150ns     300ns     600ns
  1.00ms         150ns     300ns     600ns

pacer: p99 wait and achieved rate by spacing (holds: p99 wait <= 100µs, rate >= 98%)
  spacing                adaptive            spin_sleep                  spin
  1.00µs           200µs 90.0% --        200µs 90.0% --      20.0µs 100.0% ok
  2.00µs         20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok
  5.00µs         20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok
  10.0µs         20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok
  20.0µs         20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok
  50.0µs         20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok
  100µs          20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok
  200µs          20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok
  1.00ms         20.0µs 100.0% ok      20.0µs 100.0% ok      20.0µs 100.0% ok

finest spacing held: adaptive 2.00µs, spin_sleep 2.00µs, spin 1.00µs
recommended waiting: adaptive (the default holds spacings down to 2.00µs here; the spinning \
presets gain little over it and cost CPU)
  select it with: paceline run FILE --waiting adaptive
";
    assert_eq!(c.to_string(), want);
}

#[test]
fn percentiles_use_nearest_rank() {
    let v: Vec<Nanos> = (1..=100).collect();
    assert_eq!(percentile(&v, 0.5), 50);
    assert_eq!(percentile(&v, 0.99), 99);
    assert_eq!(percentile(&[], 0.99), 0);
    assert_eq!(percentile(&[7], 0.01), 7);
}

/// Wall-clock, so tolerant: only sanity bounds, on a short budget.
#[test]
fn measuring_gives_sane_numbers() {
    let c = calibrate(Budget {
        reads: 10_000,
        sleep_samples: 5,
        trial: Duration::from_millis(2),
    });
    let m = &c.measurements;
    assert!(
        m.clock_read > 0.0 && m.clock_read < 100_000.0,
        "{}",
        m.clock_read
    );
    assert!(m.instant_read > 0.0 && m.instant_read < 100_000.0);
    assert_eq!(m.os_sleep.len(), SLEEPS.len());
    assert_eq!(m.spin_sleep.len(), SLEEPS.len());
    assert_eq!(m.pacer.len(), SLICES.len() * TRIED.len());
    for s in m.os_sleep.iter().chain(&m.spin_sleep) {
        assert!(
            s.p50_late <= s.p99_late && s.p99_late <= s.max_late,
            "{s:?}"
        );
    }
    assert!(m.pacer.iter().all(|t| t.achieved > 0.0));
    assert!(c.to_string().contains("recommended waiting: "));
}
