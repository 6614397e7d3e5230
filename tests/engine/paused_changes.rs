//! Changes made while paused (audit p17, H3): a rate set or a ramp begun while
//! paused is kept for the resume and does not end the pause; the mean target
//! counts the pause as 0 whatever falls inside it; a scope change made while
//! paused is noted at the resume and moves no op's wait by the pause.

use crate::workloads::{LONG, Script};
use paceline::{
    ActivityConfig, Clock, Engine, Event, ManualClock, Outcome, RateSpec, Scope, TimelineEntry,
    mean_target_rate,
};
use std::time::Duration;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

/// The rate events (not notes) strictly between `from` and `to`.
fn rate_events(timeline: &[TimelineEntry], from: u64, to: u64) -> Vec<TimelineEntry> {
    timeline
        .iter()
        .filter(|e| e.at > from && e.at < to && matches!(e.event, Event::Rate { .. }))
        .cloned()
        .collect()
}

/// H3: 100/s, paused at 1 s, `PUT 50` at 1.3 s, resumed at 3.3 s, read at 5 s:
/// the mean target is (100 x 1 + 50 x 1.7) / 5 = 37/s, not 56.7/s (the rest of
/// the pause counted at 50/s), and a window inside the pause asks for 0.
#[test]
fn manual_clock_rate_set_while_paused_is_kept_for_the_resume() {
    let clock = ManualClock::new();
    let work = Script::new(|_, _| Ok(()));
    let (reached, go) = work.hooks.hook(0);
    let run = Engine::with_clock(clock.clone())
        .start(
            ActivityConfig::new("k")
                .cycles(0..1_000)
                .rate(RateSpec::new(100.0)),
            work,
        )
        .unwrap();
    reached.recv_timeout(LONG).unwrap();
    let t0 = clock.now();
    clock.advance_nanos(S);
    run.pause().unwrap();
    clock.advance_nanos(300 * MS);
    run.set_rate(RateSpec::new(50.0)).unwrap();
    let kept = clock.now();
    assert_eq!(run.status().state, paceline::RunState::Paused);
    clock.advance_nanos(2 * S);
    run.resume().unwrap();
    let resumed = clock.now();
    clock.advance_nanos(1_700 * MS);
    let end = clock.now();
    let timeline = run.timeline();
    assert!(
        rate_events(&timeline, t0 + S, resumed).is_empty(),
        "a rate event inside the pause: {timeline:?}"
    );
    assert!(
        timeline.iter().any(|e| e.at == kept
            && e.event == Event::Note("rate 50/s kept for the resume".into())),
        "{timeline:?}"
    );
    let mean = mean_target_rate(100.0, &timeline, t0, end);
    assert!(near(mean, 37.0), "mean target {mean}: {timeline:?}");
    let inside = mean_target_rate(100.0, &timeline, t0 + 1_500 * MS, t0 + 3 * S);
    assert_eq!(
        inside, 0.0,
        "a window inside the pause asked for {inside}/s"
    );
    go.send(()).unwrap();
    run.stop();
    assert_eq!(run.wait_timeout(LONG), Some(Outcome::Stopped));
}

/// H3: a scope change made while paused is noted at the resume (when the
/// schedule takes the new scope up), not when the spec is set, and the
/// pause counts as 0 over it.
#[test]
fn manual_clock_scope_change_while_paused_is_noted_at_the_resume() {
    let clock = ManualClock::new();
    let work = Script::new(|_, _| Ok(()));
    let (reached, go) = work.hooks.hook(0);
    let run = Engine::with_clock(clock.clone())
        .start(
            ActivityConfig::new("s")
                .cycles(0..1_000)
                .rate(RateSpec::new(100.0).scope(Scope::Thread)),
            work,
        )
        .unwrap();
    reached.recv_timeout(LONG).unwrap();
    clock.advance_nanos(S);
    run.pause().unwrap();
    clock.advance_nanos(S);
    run.set_rate(RateSpec::new(50.0)).unwrap();
    let set = clock.now();
    clock.advance_nanos(S);
    run.resume().unwrap();
    let resumed = clock.now();
    let timeline = run.timeline();
    let scope: Vec<_> = timeline
        .iter()
        .filter(|e| matches!(&e.event, Event::Note(n) if n.starts_with("scope ")))
        .collect();
    assert_eq!(scope.len(), 1, "{timeline:?}");
    assert_eq!(scope[0].at, resumed, "set at {set}: {timeline:?}");
    assert_eq!(
        scope[0].event,
        Event::Note("scope thread -> activity".into())
    );
    go.send(()).unwrap();
    run.stop();
    assert_eq!(run.wait_timeout(LONG), Some(Outcome::Stopped));
}

/// H3: a scope change made while paused moves no op's wait by the pause: a
/// worker that slept toward its slot in the old scope's schedule when the
/// pause came gets a slot from the resume, not its pre-pause one (a 1.5 s
/// pause read as one op's 1.5 s wait). On the real clock: a worker waits in
/// the pacer only there (the manual clock jumps to any slot at once); two
/// workers at 50/s spend nearly all their time asleep toward a slot, and the
/// bound (half the pause) is wide for a loaded machine.
#[test]
fn scope_change_while_paused_books_no_wait() {
    for (from, to) in [
        (Scope::Thread, Scope::Activity),
        (Scope::Activity, Scope::Thread),
    ] {
        let run = Engine::new()
            .start(
                ActivityConfig::new("w")
                    .threads(2)
                    .cycles(0..1_000)
                    .rate(RateSpec::new(50.0).scope(from)),
                Script::new(|_, _| Ok(())),
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(250));
        run.pause().unwrap();
        std::thread::sleep(Duration::from_millis(750));
        run.set_rate(RateSpec::new(25.0).scope(to)).unwrap();
        std::thread::sleep(Duration::from_millis(750));
        run.resume().unwrap();
        std::thread::sleep(Duration::from_millis(350));
        run.stop();
        assert_eq!(run.wait_timeout(LONG), Some(Outcome::Stopped));
        let t = run.totals();
        let max = t.wait().max();
        assert!(max < 750 * MS, "{from:?} -> {to:?}: wait max {max} ns");
    }
}
