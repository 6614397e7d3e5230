//! NB5's date and time functions over epoch milliseconds: `ToJavaInstant`,
//! `ToDate` and `StringDateWrapper`, rendered as Java renders them, in UTC
//! (NB5 uses the JVM's default zone, UTC on its usual hosts and containers).

use super::Func;
use super::compile::Ctx;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::parse::Arg;
use crate::activity::bindings::value::{Kind, Value};

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &[
    "ToJavaInstant",
    "ToDate",
    "StringDateWrapper",
    "ToEpochTimeUUID",
    "ToFinestTimeUUID",
    "ToJodaDateTime",
    "ToTimeUUIDMin",
    "ToTimeUUIDMax",
    "LongToLocalDateDays",
];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "ToJavaInstant" => {
            "`ToJavaInstant()`, `ToJavaInstant(spacing)` or `ToJavaInstant(spacing, repeat)`: \
             epoch milliseconds `input * spacing / repeat`"
        }
        "ToDate" => "`ToDate()`, `ToDate(spacing)` or `ToDate(spacing, repeat)`",
        "ToEpochTimeUUID" => {
            "`ToEpochTimeUUID()`, `(node)`, `(node, clock)`, `('2018-02-01 05:00:00')`, \
             `('TIME', node)` or `('TIME', node, clock)`"
        }
        "ToFinestTimeUUID" => {
            "`ToFinestTimeUUID()`, `(node)`, `(node, clock)`, `('2018-02-01 05:00:00')`, \
             `('TIME', node)` or `('TIME', node, clock)`: the input in 100 ns ticks"
        }
        "ToJodaDateTime" => {
            "`ToJodaDateTime()`, `ToJodaDateTime('spacing')` or `ToJodaDateTime(spacing, repeat)`"
        }
        "ToTimeUUIDMin" => "`ToTimeUUIDMin()` on epoch milliseconds",
        "ToTimeUUIDMax" => "`ToTimeUUIDMax()` on epoch milliseconds",
        "LongToLocalDateDays" => "`LongToLocalDateDays()`: the input as days since 1970-01-01",
        "StringDateWrapper" => {
            "`StringDateWrapper('yyyy-MM-dd HH:mm:ss.SSS')`: a Joda-Time pattern over epoch \
             milliseconds"
        }
        _ => return None,
    })
}

/// A compiled function of this file.
#[derive(Debug, Clone)]
pub(crate) enum Time {
    /// `java.time.Instant.toString()` of `input * spacing / repeat` ms.
    Instant { spacing: i64, repeat: i64 },
    /// `java.util.Date.toString()` of `input * spacing / repeat` ms.
    Date { spacing: i64, repeat: i64 },
    /// A Joda-Time `DateTimeFormat` pattern.
    Pattern(Vec<Piece>),
    /// A version-1 time UUID of `input + base` epoch milliseconds.
    Uuid1 { base: i64, node: i64, clock: i64 },
    /// A version-1 time UUID of `input + base` 100 ns ticks since 1582-10-15.
    Uuid1Ticks { base: i64, node: i64, clock: i64 },
    /// The Cassandra driver's `Uuids.startOf(ms)` (`max`: `Uuids.endOf(ms)`).
    UuidBound { max: bool },
    /// `LocalDate.ofEpochDay((int) input & Integer.MAX_VALUE).toString()`.
    LocalDate,
    /// Joda-Time's `DateTime.toString()` in UTC of `input * spacing / repeat` ms.
    Joda {
        spacing: i64,
        repeat: i64,
        pattern: Vec<Piece>,
    },
}

/// Milliseconds from the Gregorian calendar's start (1582-10-15) to 1970.
const GREGORIAN_MS: i64 = 12_219_292_800_000;

/// NB5's `ToEpochTimeUUID`: a version-1 UUID whose time is `ms` in 100 ns
/// ticks since 1582-10-15, with the node and clock sequence given.
pub(crate) fn time_uuid(ms: i64, node: i64, clock: i64) -> String {
    ticks_uuid(
        ms.wrapping_add(GREGORIAN_MS).wrapping_mul(10_000),
        node,
        clock,
    )
}

/// NB5's version-1 UUID of `ticks` (100 ns since 1582-10-15), node and clock
/// (`ToFinestTimeUUID`'s `msbBitsFor` and `lsbBitsFor`).
pub(crate) fn ticks_uuid(ticks: i64, node: i64, clock: i64) -> String {
    let lsb = ((clock as u64 & 0x3fff) << 48) | 0x8000_0000_0000_0000 | node as u64;
    uuid_text(ticks, lsb)
}

/// A version-1 UUID's text: `ticks` laid out in the most significant half
/// (time_low, time_mid, version 1 and time_hi), `lsb` the least significant.
fn uuid_text(ticks: i64, lsb: u64) -> String {
    let ticks = ticks as u64;
    let msb = 0x1000
        | (ticks & 0x0fff_0000_0000_0000) >> 48
        | (ticks & 0x0000_ffff_0000_0000) >> 16
        | (ticks & 0xffff_ffff) << 32;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        msb >> 32,
        (msb >> 16) & 0xffff,
        msb & 0xffff,
        lsb >> 48,
        lsb & 0xffff_ffff_ffff
    )
}

/// `java.time.LocalDate.toString()` of a day since 1970-01-01: `2018-02-01`,
/// a year past 9999 with its sign (`+10000-01-01`).
pub(crate) fn local_date(days: i64) -> String {
    let (y, m, d) = crate::nanos::civil_from_days(days);
    let year = if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    format!("{year}-{m:02}-{d:02}")
}

/// One part of a compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Lit(String),
    /// A field letter and how many times it was written.
    Field(char, usize),
}

/// A UTC date and time, from epoch milliseconds.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    /// 0 is Monday.
    weekday: u32,
    day_of_year: u32,
    hour: u32,
    minute: u32,
    second: u32,
    millis: u32,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn civil(ms: i64) -> Civil {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Proleptic Gregorian, as java.time.
    let (year, month, day) = crate::nanos::civil_from_days(days);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    const BEFORE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let day_of_year = BEFORE[month as usize - 1] + day + u32::from(leap && month > 2);
    Civil {
        year,
        month,
        day,
        // 1970-01-01 was a Thursday.
        weekday: (days + 3).rem_euclid(7) as u32,
        day_of_year,
        hour: (in_day / 3_600_000) as u32,
        minute: (in_day / 60_000 % 60) as u32,
        second: (in_day / 1000 % 60) as u32,
        millis: (in_day % 1000) as u32,
    }
}

/// `Instant.ofEpochMilli(ms).toString()`: `2018-02-01T05:00:00Z`, with `.SSS`
/// when the milliseconds are not zero; a year past 9999 gets a `+`.
pub(crate) fn instant(ms: i64) -> String {
    let c = civil(ms);
    let year = if c.year > 9999 {
        format!("+{}", c.year)
    } else if c.year < 0 {
        format!("-{:04}", -c.year)
    } else {
        format!("{:04}", c.year)
    };
    let frac = if c.millis == 0 {
        String::new()
    } else {
        format!(".{:03}", c.millis)
    };
    format!(
        "{year}-{:02}-{:02}T{:02}:{:02}:{:02}{frac}Z",
        c.month, c.day, c.hour, c.minute, c.second
    )
}

/// `new java.util.Date(ms).toString()` in UTC: `Thu Feb 01 05:00:00 UTC 2018`.
pub(crate) fn date(ms: i64) -> String {
    let c = civil(ms);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        &DAYS[c.weekday as usize][..3],
        &MONTHS[c.month as usize - 1][..3],
        c.day,
        c.hour,
        c.minute,
        c.second,
        c.year
    )
}

/// Splits a Joda-Time pattern into literals and fields, as Joda's
/// `DateTimeFormat.forPattern` does; a letter it has no meaning for here is
/// refused, named.
pub(crate) fn parse_pattern(pattern: &str) -> Result<Vec<Piece>, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            // `''` is a quote; otherwise text up to the closing quote (Joda
            // takes an unclosed one to the end of the pattern).
            if chars.get(i + 1) == Some(&'\'') {
                lit.push('\'');
                i += 2;
                continue;
            }
            i += 1;
            while i < chars.len() {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        lit.push('\'');
                        i += 2;
                        continue;
                    }
                    break;
                }
                lit.push(chars[i]);
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_alphabetic() {
            let mut n = 1;
            while chars.get(i + n) == Some(&c) {
                n += 1;
            }
            if !"GyYMdahHkKmsSEeDzZ".contains(c) {
                return Err(format!(
                    "the letter `{c}` of the date pattern `{pattern}` is not rendered here \
                     (the letters are G y Y M d a h H k K m s S E e D z Z)"
                ));
            }
            if !lit.is_empty() {
                out.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            out.push(Piece::Field(c, n));
            i += n;
        } else {
            lit.push(c);
            i += 1;
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

/// Joda's `formatter.print(ms)` in UTC.
pub(crate) fn format_pattern(pieces: &[Piece], ms: i64) -> String {
    use std::fmt::Write;
    let c = civil(ms);
    let mut s = String::new();
    for p in pieces {
        let (f, n) = match p {
            Piece::Lit(l) => {
                s.push_str(l);
                continue;
            }
            Piece::Field(f, n) => (*f, *n),
        };
        let num = |s: &mut String, v: i64| {
            let _ = if v < 0 {
                write!(s, "-{:0n$}", -v)
            } else {
                write!(s, "{v:0n$}")
            };
        };
        match f {
            'G' => s.push_str(if c.year > 0 { "AD" } else { "BC" }),
            'y' | 'Y' if n == 2 => num(&mut s, c.year.rem_euclid(100)),
            'y' => num(&mut s, c.year),
            // Year of era: 1 BC is year 1.
            'Y' => num(&mut s, if c.year > 0 { c.year } else { 1 - c.year }),
            'M' if n >= 4 => s.push_str(MONTHS[c.month as usize - 1]),
            'M' if n == 3 => s.push_str(&MONTHS[c.month as usize - 1][..3]),
            'M' => num(&mut s, c.month.into()),
            'd' => num(&mut s, c.day.into()),
            'a' => s.push_str(if c.hour < 12 { "AM" } else { "PM" }),
            'h' => num(&mut s, ((c.hour + 11) % 12 + 1).into()),
            'H' => num(&mut s, c.hour.into()),
            'k' => num(&mut s, if c.hour == 0 { 24 } else { c.hour.into() }),
            'K' => num(&mut s, (c.hour % 12).into()),
            'm' => num(&mut s, c.minute.into()),
            's' => num(&mut s, c.second.into()),
            'S' => {
                // The fraction of the second, truncated to n digits.
                let ms = format!("{:03}", c.millis);
                let digits: String = ms.chars().chain(std::iter::repeat('0')).take(n).collect();
                s.push_str(&digits);
            }
            'E' if n >= 4 => s.push_str(DAYS[c.weekday as usize]),
            'E' => s.push_str(&DAYS[c.weekday as usize][..3]),
            'e' => num(&mut s, (c.weekday + 1).into()),
            'D' => num(&mut s, c.day_of_year.into()),
            'z' if n >= 4 => s.push_str("Coordinated Universal Time"),
            'z' => s.push_str("UTC"),
            'Z' if n == 1 => s.push_str("+0000"),
            'Z' if n == 2 => s.push_str("+00:00"),
            _ => s.push_str("UTC"),
        }
    }
    s
}

impl Time {
    pub(crate) fn apply(&self, v: Value) -> Value {
        let x = match v {
            Value::I64(i) => i,
            other => other.as_u64() as i64,
        };
        // Java's long arithmetic: wraps, and divides toward zero.
        let scaled = |spacing: i64, repeat: i64| x.wrapping_mul(spacing).wrapping_div(repeat);
        Value::Str(match self {
            Time::Instant { spacing, repeat } => instant(scaled(*spacing, *repeat)),
            Time::Date { spacing, repeat } => date(scaled(*spacing, *repeat)),
            Time::Pattern(p) => format_pattern(p, x),
            Time::Uuid1 { base, node, clock } => time_uuid(x.wrapping_add(*base), *node, *clock),
            Time::Uuid1Ticks { base, node, clock } => {
                ticks_uuid(x.wrapping_add(*base), *node, *clock)
            }
            Time::Joda {
                spacing,
                repeat,
                pattern,
            } => format_pattern(pattern, scaled(*spacing, *repeat)),
            // adapter-cqld4's `long_uuid/ToTimeUUIDMin.java` and `Max`: the
            // driver's `Uuids.startOf` (lsb 0x8080..80, "8 times -128") and
            // `Uuids.endOf` (the last tick of the millisecond, lsb 0x7f7f..7f).
            Time::UuidBound { max: false } => uuid_text(
                x.wrapping_add(GREGORIAN_MS).wrapping_mul(10_000),
                0x8080_8080_8080_8080,
            ),
            Time::UuidBound { max: true } => uuid_text(
                x.wrapping_add(1 + GREGORIAN_MS)
                    .wrapping_mul(10_000)
                    .wrapping_sub(1),
                0x7f7f_7f7f_7f7f_7f7f,
            ),
            Time::LocalDate => local_date(i64::from(x as i32 & i32::MAX)),
        })
    }
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| compile_known(cx, input))
}

fn compile_known(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    if !input.is_int() {
        return Err(BindingError::TypeMismatch {
            binding: cx.binding.to_string(),
            at: cx.call.at,
            function: cx.name.to_string(),
            takes: "an integer (epoch milliseconds)",
            gets: input,
        });
    }
    let t = match cx.name {
        "StringDateWrapper" => {
            cx.arity(1, 1)?;
            let pattern = cx.string(0)?;
            Time::Pattern(parse_pattern(&pattern).map_err(|why| cx.bad(cx.at(0), why))?)
        }
        "ToEpochTimeUUID" | "ToFinestTimeUUID" => {
            cx.arity(0, 3)?;
            let finest = cx.name == "ToFinestTimeUUID";
            let args = &cx.call.args;
            let (base, from) = match args.first() {
                Some(Arg::Str(spec, at)) => {
                    let ms = super::extra::epoch_millis(spec).ok_or_else(|| {
                        cx.bad(*at, format!("cannot read the time `{spec}` (UTC)"))
                    })?;
                    // NB5 adds the Gregorian offset to a base time twice (it
                    // keeps the base as milliseconds since 1582): so here.
                    // `ToFinestTimeUUID` keeps it as ticks since 1582, once
                    // (`DateTimeFormats.parseEpochTimeToTimeUUIDTicks`).
                    let base = ms + GREGORIAN_MS;
                    (
                        if finest {
                            base.wrapping_mul(10_000)
                        } else {
                            base
                        },
                        1,
                    )
                }
                _ => (0, 0),
            };
            let mut nums = [0i64; 2];
            for (slot, i) in nums.iter_mut().zip(from..args.len()) {
                *slot = i64::try_from(cx.int(i)?)
                    .map_err(|_| cx.bad(cx.at(i), "needs a signed 64-bit integer"))?;
            }
            if args.len() > from + 2 {
                return Err(cx.bad(cx.call.at, "takes at most a time, a node and a clock"));
            }
            let (node, clock) = (nums[0], nums[1]);
            if finest {
                Time::Uuid1Ticks { base, node, clock }
            } else {
                Time::Uuid1 { base, node, clock }
            }
        }
        "ToTimeUUIDMin" | "ToTimeUUIDMax" | "LongToLocalDateDays" => {
            cx.arity(0, 0)?;
            match cx.name {
                "LongToLocalDateDays" => Time::LocalDate,
                name => Time::UuidBound {
                    max: name == "ToTimeUUIDMax",
                },
            }
        }
        // NB5's `from_long/to_time_types/ToJodaDateTime.java`: `()`,
        // `(String spacing)` or `(int spacing, int repeat)`; the `DateTime` in
        // UTC, printed by its `toString()` (ISO, always with milliseconds; a
        // zero offset is `Z`).
        "ToJodaDateTime" => {
            cx.arity(0, 2)?;
            let args = &cx.call.args;
            let int = |i: usize| -> Result<i64, BindingError> {
                match &args[i] {
                    Arg::Int(v, at) => i32::try_from(*v)
                        .map(i64::from)
                        .map_err(|_| cx.bad(*at, "needs an int (32 bits), as NB5")),
                    other => Err(cx.wrong(i, other, "an integer")),
                }
            };
            let (spacing, repeat) = match args.len() {
                0 => (1, 1),
                1 => match &args[0] {
                    Arg::Str(t, at) => (
                        t.trim()
                            .parse::<i32>()
                            .map(i64::from)
                            .map_err(|_| cx.bad(*at, format!("needs an int spacing, not `{t}`")))?,
                        1,
                    ),
                    other => {
                        return Err(cx.wrong(
                            0,
                            other,
                            "the spacing as text (NB5's one-argument form is `ToJodaDateTime('5')`)",
                        ));
                    }
                },
                _ => (int(0)?, int(1)?),
            };
            if repeat == 0 {
                return Err(cx.bad(cx.at(1), "needs repeat > 0 (it divides)"));
            }
            let pattern = parse_pattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
                .map_err(|why| cx.bad(cx.call.at, why))?;
            Time::Joda {
                spacing,
                repeat,
                pattern,
            }
        }
        name => {
            cx.arity(0, 2)?;
            let int = |i: usize| -> Result<i64, BindingError> {
                match cx.call.args.get(i) {
                    None => Ok(1),
                    Some(Arg::Int(v, at)) => i32::try_from(*v)
                        .map(i64::from)
                        .map_err(|_| cx.bad(*at, "needs an int (32 bits), as NB5")),
                    Some(other) => Err(cx.wrong(i, other, "an integer")),
                }
            };
            let (spacing, repeat) = (int(0)?, int(1)?);
            if repeat == 0 {
                return Err(cx.bad(cx.at(1), "needs repeat > 0 (it divides)"));
            }
            if name == "ToDate" {
                Time::Date { spacing, repeat }
            } else {
                Time::Instant { spacing, repeat }
            }
        }
    };
    Ok((Func::Time(Box::new(t)), Kind::Str))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `java.time.Instant.toString()` (ISO_INSTANT) and `java.util.Date.toString()`
    /// in UTC; NB5's `from_long/to_time_types/ToJavaInstant.java` and `ToDate.java`.
    #[test]
    fn instants_and_dates_render_as_java() {
        assert_eq!(instant(0), "1970-01-01T00:00:00Z");
        assert_eq!(instant(1_517_461_200_000), "2018-02-01T05:00:00Z");
        assert_eq!(instant(1_517_461_200_123), "2018-02-01T05:00:00.123Z");
        assert_eq!(instant(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(instant(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(instant(253_402_300_800_000), "+10000-01-01T00:00:00Z");
        assert_eq!(date(0), "Thu Jan 01 00:00:00 UTC 1970");
        // `ToEpochTimeUUID.java`: msb from the 100 ns ticks since 1582-10-15
        // (time_low, time_mid, version 1 + time_hi), lsb the variant, clock, node.
        // At the epoch: 0x01B21DD213814000 ticks.
        assert_eq!(time_uuid(0, 0, 0), "13814000-1dd2-11b2-8000-000000000000");
        assert_eq!(time_uuid(1, 5, 3), "13816710-1dd2-11b2-8003-000000000005");
        assert_eq!(date(1_517_461_200_000), "Thu Feb 01 05:00:00 UTC 2018");
    }

    /// Joda-Time's `DateTimeFormat.forPattern(p).print(ms)` (NB5's
    /// `from_long/to_string/StringDateWrapper.java`), with the two patterns NB5's
    /// files use.
    #[test]
    fn joda_patterns_render_as_joda_prints_them() {
        let f = |p: &str, ms: i64| format_pattern(&parse_pattern(p).unwrap(), ms);
        let t = 1_517_461_200_000 + 13 * 3_600_000 + 7_089; // 2018-02-01 18:00:07.089
        assert_eq!(f("yyyy-MM-dd HH:mm:ss.SSS", t), "2018-02-01 18:00:07.089");
        // An unclosed quote runs to the end, as in Joda: `'Z` is the text `Z`.
        assert_eq!(f("yyyy-MM-dd'T'hh:mm:ss'Z", t), "2018-02-01T06:00:07Z");
        assert_eq!(f("hh a", 0), "12 AM");
        assert_eq!(f("EEE, d MMM yy", 0), "Thu, 1 Jan 70");
        assert_eq!(
            f("EEEE MMMM D Z ZZ z", 0),
            "Thursday January 1 +0000 +00:00 UTC"
        );
        assert_eq!(f("'it''s' S SSSS", 1_234), "it's 2 2340");
        assert!(
            parse_pattern("yyyy ww")
                .unwrap_err()
                .contains("the letter `w` of the date pattern `yyyy ww`")
        );
    }
}
