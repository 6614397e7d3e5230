//! Human units: durations and rates to 3 significant digits.

use paceline::Nanos;

/// Nanoseconds in human units with 3 significant digits: `0ns`, `523ns`, `1.23µs`,
/// `45.6ms`, `2.00s`; past 1000 s, whole seconds (`1234s`).
pub fn duration(nanos: Nanos) -> String {
    paceline::nanos::human(nanos as f64, "")
}

/// A figure `nanos` of a distribution of `count` values, as [`duration`]; `-`
/// when it holds none (an interval with no ops has no percentile, and `0ns`
/// would read as ops that took no time).
pub fn figure(count: u64, nanos: Nanos) -> String {
    if count == 0 {
        "-".to_string()
    } else {
        duration(nanos)
    }
}

/// A time left, as a person reads it: `45.2s`, `12m 30s`, `2h 48m`, `116d 18h`
/// (issue 24, item 17: `ETA 10087565s`); under 100 s as [`duration`].
pub fn eta(nanos: Nanos) -> String {
    let secs = nanos / 1_000_000_000;
    if secs < 100 {
        return duration(nanos);
    }
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else {
        format!("{m}m {s}s")
    }
}

/// A rate in ops per second with 3 significant digits and a K/M/G suffix, as
/// [`paceline::RateSpec`] reads them: `0`, `0.00100`, `1.50`, `950`, `9.99K`,
/// `2.50M`.
pub fn rate(ops_per_sec: f64) -> String {
    if !ops_per_sec.is_finite() || ops_per_sec <= 0.0 {
        return "0".to_string();
    }
    const UNITS: [(f64, &str); 4] = [(1.0, ""), (1e3, "K"), (1e6, "M"), (1e9, "G")];
    let mut chosen = UNITS[0];
    for &(scale, suffix) in &UNITS {
        if ops_per_sec >= scale {
            chosen = (scale, suffix);
        }
    }
    let (scale, suffix) = chosen;
    // Below 0.1/s two decimals lose the rate (audit L2: 0.001/s printed as
    // `0.00/s`): three significant digits, as above it.
    if ops_per_sec < 0.0995 {
        let decimals = (2 - ops_per_sec.log10().floor() as i32).clamp(3, 17) as usize;
        return format!("{ops_per_sec:.decimals$}");
    }
    let text = three_digits(ops_per_sec / scale);
    if text.parse::<f64>().unwrap_or(0.0) >= 1000.0 && suffix != "G" {
        let next = UNITS
            .iter()
            .position(|&(s, _)| s == scale)
            .map_or(UNITS[0], |i| UNITS[i + 1]);
        return format!("{}{}", three_digits(ops_per_sec / next.0), next.1);
    }
    format!("{text}{suffix}")
}

/// `v` to 3 significant digits (0 to 2 decimals); values of 1000 and more keep
/// their integer digits.
fn three_digits(v: f64) -> String {
    // Decide the decimals on the rounded value, so 9.996 becomes "10.0", not "10.00".
    let decimals = if v >= 99.95 {
        0
    } else if v >= 9.995 {
        1
    } else {
        2
    };
    format!("{v:.decimals$}")
}

/// `at - base` as [`seconds`], with a minus sign when `at` is before `base`.
pub fn seconds_since(at: Nanos, base: Nanos) -> String {
    if at >= base {
        seconds(at - base)
    } else {
        format!("-{}", seconds(base - at))
    }
}

/// `at - base` in seconds to the millisecond, as [`seconds_since`] prints it
/// (whole milliseconds, toward zero): the HTML report's times, so that its
/// tables and plots give the console's, the CSV's and the HDR log's numbers.
pub fn ms_since(at: Nanos, base: Nanos) -> f64 {
    ((i128::from(at) - i128::from(base)) / 1_000_000) as f64 / 1e3
}

/// `at - base` in seconds, negative when `at` is before `base` (the JSON's
/// times, counted from an activity's first slot).
pub fn seconds_f64_since(at: Nanos, base: Nanos) -> f64 {
    (i128::from(at) - i128::from(base)) as f64 / 1e9
}

/// Seconds with millisecond precision, as timelines show them: `12.345`.
pub fn seconds(nanos: Nanos) -> String {
    format!(
        "{}.{:03}",
        nanos / 1_000_000_000,
        (nanos / 1_000_000) % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_three_significant_digits() {
        let cases = [
            (0, "0ns"),
            (7, "7ns"),
            (999, "999ns"),
            (1_000, "1.00µs"),
            (1_234, "1.23µs"),
            (12_345, "12.3µs"),
            (123_456, "123µs"),
            (999_449, "999µs"),
            (999_500, "1.00ms"),
            (45_600_000, "45.6ms"),
            (2_000_000_000, "2.00s"),
            (61_260_000_000, "61.3s"),
            (1_234_000_000_000, "1234s"),
        ];
        for (n, want) in cases {
            assert_eq!(duration(n), want, "{n} ns");
        }
    }

    #[test]
    fn rates_have_three_significant_digits_and_suffixes() {
        let cases = [
            (0.0, "0"),
            (-1.0, "0"),
            (f64::NAN, "0"),
            (0.5, "0.50"),
            (1.5, "1.50"),
            (950.0, "950"),
            (999.96, "1.00K"),
            (9_990.0, "9.99K"),
            (10_000.0, "10.0K"),
            (2_500_000.0, "2.50M"),
            (1e9, "1.00G"),
        ];
        for (r, want) in cases {
            assert_eq!(rate(r), want, "{r} ops/s");
        }
    }

    #[test]
    fn audit_l2_rates_under_a_tenth_keep_three_significant_digits() {
        // They printed as `0.00` (0.001/s) and `0.01` (0.005/s).
        for (r, want) in [
            (0.001, "0.00100"),
            (0.005, "0.00500"),
            (0.05, "0.0500"),
            (0.0994, "0.0994"),
            (0.000001, "0.00000100"),
            (0.1, "0.10"),
        ] {
            assert_eq!(rate(r), want, "{r} ops/s");
        }
    }

    #[test]
    fn ms_since_is_what_seconds_since_prints() {
        for (at, base) in [
            (4_001_500_000, 0),
            (0, 2_541_600_000),
            (700_000_000, 0),
            (5, 7),
            (3_000_999_999, 1_000_000_000),
        ] {
            let printed: f64 = seconds_since(at, base).parse().unwrap_or(f64::NAN);
            assert_eq!(ms_since(at, base), printed, "{at} - {base}");
        }
    }

    #[test]
    fn seconds_show_milliseconds() {
        assert_eq!(seconds(61_250_000_000), "61.250");
        assert_eq!(seconds(5_000_000), "0.005");
    }
}
