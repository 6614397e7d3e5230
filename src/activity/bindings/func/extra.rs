//! NB5's functions over text, files and times: compiled here, applied per
//! cycle by [`Extra::apply`]. Each follows NB5's own (`virtdata-lib-basics`),
//! with paceline's hash where NB5 hashes (docs/nb5.md lists the differences).

use super::Func;
use super::compile::Ctx;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::hash::{hash_keyed, seed_key};
use crate::activity::bindings::parse::Arg;
use crate::activity::bindings::value::{Kind, Value};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &[
    "HashedLineToString",
    "HashedFileExtractToString",
    "ModuloToBoolean",
    "AddHashRange",
    "URLEncode",
    "ToHexString",
    "ToBase64String",
    "EscapeJSON",
    "ReplaceAll",
    "ReplaceRegex",
    "StartingEpochMillis",
    "ElapsedNanoTime",
];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "HashedLineToString" => "`HashedLineToString('data/words.txt')`: a line of the file",
        "HashedFileExtractToString" => {
            "`HashedFileExtractToString('data/lorem_ipsum_full.txt', min, max)` or \
             `HashedFileExtractToString('FILE', SIZE_CHAIN)`"
        }
        "ModuloToBoolean" => "`ModuloToBoolean()`",
        "AddHashRange" => "`AddHashRange(max)` or `AddHashRange(min, max)` with integers",
        "URLEncode" => "`URLEncode()` (UTF-8)",
        "ToHexString" => "`ToHexString()` on an integer",
        "ToBase64String" => "`ToBase64String()` on an integer or a string",
        "EscapeJSON" => "`EscapeJSON()` on a string",
        "ReplaceAll" => "`ReplaceAll('REGEX', 'replacement')`",
        "ReplaceRegex" => "`ReplaceRegex('REGEX', 'replacement')`",
        "StartingEpochMillis" => "`StartingEpochMillis('2018-02-01 05:00:00')` (UTC)",
        "ElapsedNanoTime" => "`ElapsedNanoTime()`",
        _ => return None,
    })
}

/// A compiled function of this file.
#[derive(Debug, Clone)]
pub(crate) enum Extra {
    /// A line of a file, picked by a hash of the input.
    Lines(Arc<Vec<String>>),
    /// A hashed extract of a file's text: its size from `size`.
    Extract {
        text: Arc<Vec<char>>,
        size: ExtractSize,
    },
    ModuloToBoolean,
    /// The input plus `min + hash mod width`.
    AddHashRange {
        min: i64,
        width: u64,
    },
    UrlEncode,
    ToHex,
    Base64,
    EscapeJson,
    Replace(regex::Regex, String),
    /// The input plus a fixed epoch in milliseconds.
    StartingEpoch(i64),
    ElapsedNanos,
}

#[derive(Debug, Clone)]
pub(crate) enum ExtractSize {
    /// NB5's `HashRange(min, max)`, both included.
    Range {
        min: u64,
        width: u64,
    },
    Chain(Box<super::Chain>),
}

/// Where `ElapsedNanoTime` counts from: the first use in this process.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Extra {
    pub(crate) fn apply(&self, v: Value) -> Value {
        match self {
            Extra::Lines(lines) => {
                let h = hash_keyed(v.as_u64(), seed_key(0));
                Value::Str(lines[(h % lines.len() as u64) as usize].clone())
            }
            Extra::Extract { text, size } => {
                let len = text.len() as u64;
                let h = hash_keyed(v.as_u64(), seed_key(0));
                let size = match size {
                    ExtractSize::Range { min, width } => min.wrapping_add(h % width),
                    ExtractSize::Chain(c) => c.eval(v.clone()).as_u64(),
                } % len;
                // NB5: a position from `HashRange(0, 2^31 - 1)`, modulo the room left.
                let pos = (h % (1 << 31)) % (len - size);
                let (pos, size) = (pos as usize, size as usize);
                Value::Str(text[pos..pos + size].iter().collect())
            }
            Extra::ModuloToBoolean => Value::Bool(match v {
                Value::I64(i) => i % 2 == 0,
                other => other.as_u64() % 2 == 0,
            }),
            Extra::AddHashRange { min, width } => {
                let add = min.wrapping_add((hash_keyed(v.as_u64(), seed_key(0)) % width) as i64);
                match v {
                    Value::I64(i) => Value::I64(i.wrapping_add(add)),
                    other => Value::U64(other.as_u64().wrapping_add_signed(add)),
                }
            }
            Extra::UrlEncode => Value::Str(url_encode(&v.into_string())),
            Extra::ToHex => Value::Str(format!("{:x}", v.as_u64())),
            Extra::Base64 => {
                use base64::Engine;
                let e = base64::engine::general_purpose::STANDARD;
                Value::Str(match v {
                    Value::Str(s) => e.encode(s.as_bytes()),
                    other => e.encode(other.as_u64().to_be_bytes()),
                })
            }
            Extra::EscapeJson => Value::Str(escape_json(&v.into_string())),
            Extra::Replace(re, with) => {
                Value::Str(re.replace_all(&v.into_string(), with.as_str()).into_owned())
            }
            Extra::StartingEpoch(base) => {
                // NB5 wraps the input modulo the room left below i64::MAX.
                let room = (i64::MAX - base) as u64;
                Value::I64(base + (v.as_u64() % room) as i64)
            }
            Extra::ElapsedNanos => Value::I64(origin().elapsed().as_nanos() as i64),
        }
    }
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| compile_known(cx, input))
}

fn compile_known(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    let wrap = |e: Extra, k: Kind| Ok((Func::Extra(Box::new(e)), k));
    let needs = |takes: &'static str| {
        Err(BindingError::TypeMismatch {
            binding: cx.binding.to_string(),
            at: cx.call.at,
            function: cx.name.to_string(),
            takes,
            gets: input,
        })
    };
    match cx.name {
        "HashedLineToString" => {
            cx.arity(1, 1)?;
            if !input.is_int() {
                return needs("an integer");
            }
            let path = cx.string(0)?;
            let text = read_file(cx, &path)?;
            let mut lines: Vec<String> = text
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
                .collect();
            if text.ends_with('\n') {
                lines.pop();
            }
            if lines.is_empty() {
                return Err(cx.bad(cx.at(0), format!("reads `{path}`, which is empty")));
            }
            wrap(Extra::Lines(Arc::new(lines)), Kind::Str)
        }
        "HashedFileExtractToString" => {
            cx.arity(2, 3)?;
            if !input.is_int() {
                return needs("an integer");
            }
            let size = if cx.call.args.len() == 3 {
                let (min, max) = (cx.int(1)?, cx.int(2)?);
                if min < 0 || max < min || max > i32::MAX as i128 {
                    return Err(cx.bad(
                        cx.at(1),
                        format!("needs 0 <= min <= max < 2^31, not {min}, {max}"),
                    ));
                }
                ExtractSize::Range {
                    min: min as u64,
                    width: (max - min + 1) as u64,
                }
            } else {
                match &cx.call.args[1] {
                    Arg::Chain(calls, _) => {
                        let chain = super::compile(cx.binding, calls, input)?;
                        if !(chain.out().is_int() || chain.out() == Kind::F64) {
                            return Err(cx.bad(cx.at(1), "needs a size chain that gives a number"));
                        }
                        ExtractSize::Chain(Box::new(chain))
                    }
                    other => return Err(cx.wrong(1, other, "a size chain")),
                }
            };
            let path = cx.string(0)?;
            let text: Vec<char> = read_file(cx, &path)?.chars().collect();
            if text.is_empty() {
                return Err(cx.bad(cx.at(0), format!("reads `{path}`, which is empty")));
            }
            wrap(
                Extra::Extract {
                    text: Arc::new(text),
                    size,
                },
                Kind::Str,
            )
        }
        "ModuloToBoolean" => {
            cx.arity(0, 0)?;
            if !input.is_int() {
                return needs("an integer");
            }
            wrap(Extra::ModuloToBoolean, Kind::Bool)
        }
        "AddHashRange" => {
            cx.arity(1, 2)?;
            if !input.is_int() {
                return needs("an integer");
            }
            let (min, max) = match cx.call.args.len() {
                1 => (0, cx.int(0)?),
                _ => (cx.int(0)?, cx.int(1)?),
            };
            if min > max || min < i64::MIN as i128 || max >= i64::MAX as i128 {
                return Err(cx.bad(
                    cx.at(0),
                    format!("needs min <= max within signed 64-bit integers, not {min}, {max}"),
                ));
            }
            let e = Extra::AddHashRange {
                min: min as i64,
                width: (max - min + 1) as u64,
            };
            wrap(e, input)
        }
        "URLEncode" | "EscapeJSON" => {
            cx.arity(0, 0)?;
            if input != Kind::Str {
                return needs("a string");
            }
            let e = if cx.name == "URLEncode" {
                Extra::UrlEncode
            } else {
                Extra::EscapeJson
            };
            wrap(e, Kind::Str)
        }
        "ToHexString" => {
            cx.arity(0, 0)?;
            if !input.is_int() {
                return needs("an integer");
            }
            wrap(Extra::ToHex, Kind::Str)
        }
        "ToBase64String" => {
            cx.arity(0, 0)?;
            if !(input.is_int() || input == Kind::Str) {
                return needs("an integer or a string");
            }
            wrap(Extra::Base64, Kind::Str)
        }
        "ReplaceAll" | "ReplaceRegex" => {
            cx.arity(2, 2)?;
            if input != Kind::Str {
                return needs("a string");
            }
            let pattern = cx.string(0)?;
            let re = regex::Regex::new(&pattern).map_err(|e| {
                cx.bad(
                    cx.at(0),
                    format!(
                        "has a bad regular expression: {}",
                        crate::activity::error::regex_reason(&e)
                    ),
                )
            })?;
            wrap(
                Extra::Replace(re, java_replacement(&cx.string(1)?)),
                Kind::Str,
            )
        }
        "StartingEpochMillis" => {
            cx.arity(1, 1)?;
            if !input.is_int() {
                return needs("an integer");
            }
            let spec = cx.string(0)?;
            let ms = epoch_millis(&spec).ok_or_else(|| {
                cx.bad(
                    cx.at(0),
                    format!(
                        "cannot read the time `{spec}`: write `yyyy-MM-dd HH:mm:ss`, \
                         `yyyy-MM-dd HH:mm:ss.SSSZ`, `yyyyMMdd'T'HHmmssZ`, `yyyy-MM-dd`, \
                         `yyyyMMdd`, `yyyyMM` or `yyyy` (UTC)"
                    ),
                )
            })?;
            wrap(Extra::StartingEpoch(ms), Kind::I64)
        }
        _ => {
            cx.arity(0, 0)?;
            if !input.is_int() {
                return needs("an integer");
            }
            wrap(Extra::ElapsedNanos, Kind::I64)
        }
    }
}

/// A file's text, read when the binding is made; a file that is not there is
/// an error naming the function, the file and how to supply it.
pub(super) fn read_file(cx: &Ctx<'_>, path: &str) -> Result<String, BindingError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => {
            let cwd = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|_| "the working directory".into());
            let nb5 = if path.starts_with("data/") {
                format!(
                    " NB5 reads it from the data it bundles (`{path}` under \
                     `nb-virtdata/virtdata-lib-basics/src/main/resources/` of NoSQLBench's \
                     source for its `data/*.txt`, or the `src/main/resources/` of the adapter \
                     that ships it): copy that file to `{path}` under the directory paceline \
                     runs in,"
                )
            } else {
                String::new()
            };
            Err(cx.bad(
                cx.at(0),
                format!(
                    "reads the file `{path}`, which cannot be read ({e}; a relative path is \
                     relative to {cwd}).{nb5} or give the path of a file of your own"
                ),
            ))
        }
    }
}

/// Java's `URLEncoder.encode(s, UTF_8)`: letters, digits and `.-*_` kept, a
/// space as `+`, every other byte as `%XX`.
pub(crate) fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// NB5's `EscapeJSON` (commons-text `escapeJson`): `"`, `\` and `/` escaped,
/// control characters as `\n`, `\t`, ..., and every character outside
/// printable ASCII as `\uXXXX` (UTF-16 units).
pub(crate) fn escape_json(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' => out.push_str("\\/"),
            '\u{8}' => out.push_str("\\b"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04X}"));
                }
            }
        }
    }
    out
}

/// A Java replacement string (`$1` a group, `\x` a literal x) in the regex
/// crate's form (`${1}`, `$$`).
fn java_replacement(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(x) => out.push(x),
                None => {}
            },
            '$' => {
                let mut n = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    n.push(*d);
                    chars.next();
                }
                if n.is_empty() {
                    out.push_str("$$");
                } else {
                    out.push_str(&format!("${{{n}}}"));
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The epoch milliseconds of a time in one of NB5's `DateTimeFormats` (UTC
/// unless an offset is written).
pub(crate) fn epoch_millis(spec: &str) -> Option<i64> {
    let s = spec.trim();
    // Every form read here is ASCII, and the slicing below is by byte offsets after
    // byte-length checks: text with any other character is none of the forms.
    if !s.is_ascii() {
        return None;
    }
    let num = |t: &str| -> Option<i64> {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let date = |y: i64, m: i64, d: i64| -> Option<i64> {
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let days = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        ((1..=12).contains(&m) && d >= 1 && d <= days[(m - 1) as usize])
            .then(|| days_from_civil(y, m, d) * 86_400_000)
    };
    let clock = |t: &str| -> Option<i64> {
        let (h, rest) = t.split_once(':')?;
        let (mi, sec) = rest.split_once(':')?;
        let (sec, ms) = match sec.split_once('.') {
            Some((s, f)) if f.len() == 3 => (s, num(f)?),
            Some(_) => return None,
            None => (sec, 0),
        };
        let (h, mi, sec) = (num(h)?, num(mi)?, num(sec)?);
        (h < 24 && mi < 60 && sec < 60).then_some(((h * 60 + mi) * 60 + sec) * 1000 + ms)
    };
    // An offset `Z`, `+HHMM` or `-HHMM` at the end, in milliseconds east of UTC.
    let offset = |t: &str| -> Option<(String, i64)> {
        if let Some(t) = t.strip_suffix('Z') {
            return Some((t.to_string(), 0));
        }
        let i = t.rfind(['+', '-'])?;
        let (body, off) = t.split_at(i);
        let digits = off[1..].replace(':', "");
        if digits.len() != 4 {
            return None;
        }
        let mins = num(&digits[..2])? * 60 + num(&digits[2..])?;
        let sign = if off.starts_with('-') { -1 } else { 1 };
        Some((body.to_string(), sign * mins * 60_000))
    };
    if let Some((d, t)) = s.split_once(' ') {
        let (t, off) = if t.contains('.') {
            offset(t)?
        } else {
            (t.to_string(), 0)
        };
        let mut p = d.split('-');
        let (y, m, dd) = (num(p.next()?)?, num(p.next()?)?, num(p.next()?)?);
        return Some(date(y, m, dd)? + clock(&t)? - off);
    }
    if let Some((d, t)) = s.split_once('T') {
        let (t, off) = offset(t)?;
        if d.len() != 8 || t.len() != 6 {
            return None;
        }
        let day = date(num(&d[..4])?, num(&d[4..6])?, num(&d[6..])?)?;
        let hms = format!("{}:{}:{}", &t[..2], &t[2..4], &t[4..]);
        return Some(day + clock(&hms)? - off);
    }
    if s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-' {
        return date(num(&s[..4])?, num(&s[5..7])?, num(&s[8..])?);
    }
    match s.len() {
        8 => date(num(&s[..4])?, num(&s[4..6])?, num(&s[6..])?),
        6 => date(num(&s[..4])?, num(&s[4..])?, 1),
        4 => date(num(s)?, 1, 1),
        _ => None,
    }
}

/// The token of NB5's `Token(token, uri, uid, password)` when none is given:
/// fetched once per process from the auth service (NB5's Stargate `v1/auth`), as
/// NB5 fetches it when the binding is made.
pub(crate) fn fetch_token(uri: &str, uid: &str, password: &str) -> Result<String, String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    /// Tokens by (uri, uid, password).
    type Tokens = Mutex<HashMap<(String, String, String), String>>;
    static TOKENS: OnceLock<Tokens> = OnceLock::new();
    let key = (uri.to_string(), uid.to_string(), password.to_string());
    let cache = TOKENS.get_or_init(Default::default);
    if let Some(t) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(t.clone());
    }
    let token = super::token::post_for_token(uri, uid, password)?;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, token.clone());
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_nb5_reads_them_in_utc() {
        assert_eq!(epoch_millis("1970-01-01 00:00:00"), Some(0));
        assert_eq!(epoch_millis("2018-02-01 05:00:00"), Some(1_517_461_200_000));
        assert_eq!(epoch_millis("2017-01-01 23:59:59"), Some(1_483_315_199_000));
        assert_eq!(epoch_millis("2017-01-01"), Some(1_483_228_800_000));
        assert_eq!(epoch_millis("20170101"), Some(1_483_228_800_000));
        assert_eq!(epoch_millis("201701"), Some(1_483_228_800_000));
        assert_eq!(epoch_millis("2017"), Some(1_483_228_800_000));
        assert_eq!(epoch_millis("20170101T000001Z"), Some(1_483_228_801_000));
        assert_eq!(
            epoch_millis("2017-01-01 01:00:00.250+0100"),
            Some(1_483_228_800_250)
        );
        assert_eq!(epoch_millis("2017-02-29"), None);
        assert_eq!(epoch_millis("yesterday"), None);
    }

    /// Audit p16 H3: non-ASCII text panicked on a byte slice inside a character
    /// (`StartingEpochMillis` / `ToEpochTimeUUID` at load, exit 101).
    #[test]
    fn non_ascii_text_is_no_date_and_no_panic() {
        for s in [
            "ab€cde",
            "ab€cdeT000000Z",
            "2017-01-01 01:00:00.250+€1",
            "2017-01-0€",
            "20170101T00000€Z",
            "€€",
        ] {
            assert_eq!(epoch_millis(s), None, "{s}");
        }
    }

    proptest::proptest! {
        /// Any text reads as a date or as none, never a panic; a date read back
        /// from its own canonical form is the same instant.
        #[test]
        fn epoch_millis_takes_any_text(s in "\\PC{0,40}", t in "[0-9T:. +Z-]{0,30}") {
            let _ = epoch_millis(&s);
            let _ = epoch_millis(&t);
        }
    }

    #[test]
    fn text_functions_match_java() {
        assert_eq!(url_encode("a b/c?é*"), "a+b%2Fc%3F%C3%A9*");
        assert_eq!(
            escape_json("say \"hi\"/\\\n\u{1}é😀"),
            "say \\\"hi\\\"\\/\\\\\\n\\u0001\\u00E9\\uD83D\\uDE00"
        );
        assert_eq!(java_replacement("x$1\\$y$"), "x${1}$$y$$");
    }
}
