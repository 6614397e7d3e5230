//! The plots' helpers: event groups, log-axis labels, event label rows,
//! percentile labels and the spectrum.

use super::*;

#[test]
fn issue24_item20_log_axes_have_enough_labels() {
    // Latency ranges as latency_range makes them: at least 1.3 decades.
    for (lo, hi) in [
        (2e5, 5e6),   // 0.2 ms to 5 ms: plotters labelled 1 ms alone
        (4e5, 2e7),   // 0.4 ms to 20 ms: 1 ms and 10 ms
        (1e3, 1e9),   // 1 µs to 1 s
        (50.0, 8e10), // 50 ns to 80 s
    ] {
        let (bold, light) = log_ticks(lo, hi);
        assert!((4..=12).contains(&bold.len()), "{lo}..{hi}: {bold:?}");
        assert!(bold.iter().all(|v| (lo..=hi).contains(v)), "{bold:?}");
        assert!(bold.windows(2).all(|w| w[0] < w[1]), "{bold:?}");
        assert!(light.len() >= bold.len() || light.is_empty(), "{light:?}");
    }
    assert_eq!(log_ticks(2e5, 5e6).0, [2e5, 5e5, 1e6, 2e6, 5e6]);
    assert_eq!(log_ticks(0.0, 1.0), (Vec::new(), Vec::new()));
    // Drawn: the latency plot of a run within one decade has its labels.
    let svg = svg((WIDTH, LATENCY_HEIGHT), |root| {
        let mut chart = ChartBuilder::on(root)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..1.0, log_axis(4e5, 2e7))
            .map_err(err)?;
        chart
            .configure_mesh()
            .y_label_formatter(&|v| units::duration(*v as u64))
            .draw()
            .map_err(err)?;
        Ok(Vec::new())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    for label in ["500us", "1.00ms", "2.00ms", "5.00ms", "10.0ms", "20.0ms"] {
        let shown = units::duration(match label {
            "500us" => 500_000,
            "1.00ms" => 1_000_000,
            "2.00ms" => 2_000_000,
            "5.00ms" => 5_000_000,
            "10.0ms" => 10_000_000,
            _ => 20_000_000,
        });
        assert!(
            svg.contains(&format!("\n{shown}\n")),
            "{shown} not in\n{svg}"
        );
    }
}

#[test]
fn issue24_item20_event_labels_do_not_overlap() {
    // Five events 3 px apart, each label 16 px wide: each in its own row
    // until the rows run out; never two in one row closer than a width.
    let at: Vec<(i32, i32)> = (0..6).map(|i| (100 + 3 * i, 16)).collect();
    let rows = label_rows(&at);
    assert_eq!(rows, [Some(0), Some(1), Some(2), Some(3), None, None]);
    // Far apart: one row.
    let apart: Vec<(i32, i32)> = (0..5).map(|i| (100 + 40 * i, 16)).collect();
    assert!(label_rows(&apart).iter().all(|r| *r == Some(0)));
    // Every placed pair in one row is clear of each other.
    let mixed: Vec<(i32, i32)> = (0..40).map(|i| (i * i % 97 + i * 7, 26)).collect();
    let mut sorted = mixed.clone();
    sorted.sort();
    let rows = label_rows(&sorted);
    for (i, a) in sorted.iter().enumerate() {
        for (j, b) in sorted.iter().enumerate().skip(i + 1) {
            if rows[i].is_some() && rows[i] == rows[j] {
                assert!(a.0 + a.1 < b.0, "{a:?} {b:?} share row {:?}", rows[i]);
            }
        }
    }
}

#[test]
fn percentile_labels_at_powers_of_ten() {
    let labels: Vec<String> = [1.0, 2.0, 10.0, 100.0, 1000.0, 1e6, 50.0]
        .iter()
        .map(|x| percentile_label(*x))
        .collect();
    assert_eq!(labels, ["0%", "", "90%", "99%", "99.9%", "99.9999%", ""]);
}

#[test]
fn events_at_one_time_share_a_line_with_the_strongest_kind() {
    let events = [
        EventMark::new(0.0, "started"),
        EventMark::new(2.0, "rate 1000 -> 0"),
        EventMark::new(2.0004, "paused"),
        EventMark::new(3.0, "stopped"),
    ];
    let groups = group_events(&events);
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[1].number, 2);
    assert_eq!(groups[1].kind, EventKind::Pause);
    assert_eq!(groups[1].texts, ["rate 1.00K/s -> 0/s", "paused"]);
    assert_eq!(groups[2].kind, EventKind::Stop);
}

#[test]
fn a_spectrum_ends_at_the_largest_value() {
    let mut h = paceline::Latencies::new().histogram().clone();
    for v in 1..=1000u64 {
        h.record(v * 1000).unwrap_or_else(|e| panic!("{e:?}"));
    }
    let points = spectrum(&h);
    assert_eq!(points.first().map(|p| p.0), Some(1.0));
    // The largest value at the last rank (iteration may step just past 1000).
    let last = points.last().copied().unwrap_or_default();
    assert_eq!(last.1, h.max() as f64);
    assert!((1000.0..1100.0).contains(&last.0), "{last:?}");
    assert_eq!(points[0].1, 1000.0);
    // x grows with the percentile and y never falls.
    assert!(
        points
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1)
    );
    assert!(spectrum(&paceline::Latencies::new().histogram().clone()).is_empty());
}

/// Regression (session 13): the rate's step line joined the intervals on each
/// side of one left out of the plot (a partial one: the first after a launch at
/// `rate=0`), drawing a ramp from 0 to 100/s that the run never had. Time no
/// interval covers breaks the line; intervals that touch stay one line.
#[test]
fn the_step_line_breaks_where_no_interval_is_drawn() {
    let point = |start: f64, end: f64| IntervalPoint {
        start,
        end,
        ops: 0,
        target: None,
        service: Figures::default(),
        wait: Figures::default(),
        response: Figures::default(),
        partial: false,
    };
    let intervals = [
        point(-1.5, -0.5),
        point(0.5, 1.5),
        point(1.5, 2.5),
        point(2.5005, 3.5),
    ];
    let runs = steps(&intervals, |i| Some(i.start));
    let shape: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| r.iter().map(|p| p.0).collect())
        .collect();
    assert_eq!(
        shape,
        [vec![-1.5, -0.5], vec![0.5, 1.5, 1.5, 2.5, 2.5005, 3.5]]
    );
}
