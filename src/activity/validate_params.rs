//! Validation of params: the activity's `params:`, a step's overrides, and the
//! values they take (threads, durations, the driver's own params).

use super::locate::{Seg, Target};
use super::model::ParamOverrides;
use super::params::{Cycles, SeqType, TagFilter, duration};
use super::suggest;
use super::validate::{Validator, describe, is_name};
use crate::engine::{ErrorPolicy, MAX_CYCLE, MAX_THREADS};
use crate::pace::RateSpec;
use serde::Deserialize;
use serde_yaml::{Mapping, Value};

/// The largest `min_members` (the start barrier of a shared schedule).
const MAX_MEMBERS: u64 = 10_000;
const PARAM_KEYS: &[&str] = &[
    "alias",
    "driver",
    "threads",
    "concurrency",
    "cycles",
    "duration",
    "rate",
    "cyclerate",
    "arrivals",
    "seed",
    "stride",
    "seq",
    "errors",
    "tags",
    "coordinate",
    "min_members",
    "min_members_timeout",
];
/// NoSQLBench's core activity params that have no meaning here (its labels,
/// its stride rate, its retry budget and workload name, its metrics options):
/// accepted and not used.
const NB5_CORE_IGNORED: &[&str] = &[
    "labels",
    "striderate",
    "maxtries",
    "workload",
    "hdr_digits",
    "instrument",
    "async",
    "targetrate",
    "tpb",
    "dryrun",
    "op",
];

impl Validator<'_> {
    /// Reports that no driver is named anywhere.
    pub(crate) fn missing_driver(&mut self, path: Vec<Seg>, target: Target) {
        let known = suggest::list(self.loader.drivers.iter().map(String::as_str));
        self.problem(
            path,
            target,
            "no `driver` in `params`",
            Some(format!(
                "add `driver: NAME` under `params`, or give `driver=NAME` on the command line; \
                 known drivers: {known}"
            )),
        );
    }

    /// Validates a params map (the activity's, or a step's overrides when
    /// `base_driver` is given).
    pub(crate) fn params(
        &mut self,
        m: &Mapping,
        path: &[Seg],
        base_driver: Option<&str>,
    ) -> ParamOverrides {
        let mut o = ParamOverrides::default();
        let entries = self.entries(m, path);
        // The driver first: it decides which other keys are known.
        // `type` is NB5's older name of `driver` (`run type===stdout`).
        let type_is_driver = !entries.iter().any(|e| e.0 == "driver");
        for (name, p, v) in &entries {
            if name == "driver" || (name == "type" && type_is_driver) {
                match v.as_str() {
                    Some(d) if self.loader.drivers.iter().any(|k| k == d) => {
                        o.driver = Some(d.to_string())
                    }
                    // The command line's driver replaces this one: it need not exist
                    // here (an NB5 file's `cql`, run through `driver=stdout`).
                    Some(d) if self.loader.run_driver.is_some() => o.driver = Some(d.to_string()),
                    Some(d) => {
                        let known = self.loader.drivers.iter().map(String::as_str);
                        let help = match suggest::did_you_mean(d, known.clone()) {
                            Some(s) => format!("{s} known drivers: {}", suggest::list(known)),
                            None => format!("known drivers: {}", suggest::list(known)),
                        };
                        self.problem(
                            p.clone(),
                            Target::Value,
                            format!("unknown driver `{d}`"),
                            Some(help),
                        );
                        o.driver = Some(d.to_string());
                    }
                    None => {
                        let msg = format!("`driver` is a name, not {}", describe(v));
                        self.problem(p.clone(), Target::Value, msg, None);
                    }
                }
            }
        }
        let driver = self
            .loader
            .run_driver
            .clone()
            .or_else(|| o.driver.clone())
            .or_else(|| base_driver.map(str::to_string));
        let declared = driver
            .as_deref()
            .and_then(|d| self.loader.driver_params.get(d));
        // The command line's driver runs another driver's file (a dry run of
        // NB5's `driver=cql` through `stdout`): that driver's params are not
        // read, with one notice.
        let foreign = self.loader.run_driver.as_deref().is_some_and(|run| {
            o.driver
                .as_deref()
                .or(self.scopes.own_driver.as_deref())
                .or(base_driver)
                .is_none_or(|own| own.is_empty() || own != run)
        });
        for (name, p, v) in entries {
            let bad = |what: &str| format!("`{name}` {what}, not {}", describe(v));
            // NB5 drops a param left `UNDEF` or `UNSET` (a template variable
            // nobody set); `cycles=UNDEF` means something here.
            if let Some(text) = v.as_str()
                && super::template_vars::is_unset(text)
                && !(name == "cycles" && text.trim().eq_ignore_ascii_case("UNDEF"))
            {
                continue;
            }
            match name.as_str() {
                "driver" => {}
                "type" if type_is_driver => {}
                // NB5's core params that paceline has no use for: accepted.
                n if NB5_CORE_IGNORED.contains(&n) => {}
                "alias" => match v.as_str() {
                    Some(a) if is_name(a) => o.alias = Some(a.to_string()),
                    Some(a) => self.problem(
                        p,
                        Target::Value,
                        format!("`{a}` is not a usable alias"),
                        Some("use letters, digits, `_`, `-` and `.`".into()),
                    ),
                    None => self.problem(p, Target::Value, bad("is a name"), None),
                },
                "threads" => match thread_count(v) {
                    Ok(n) => o.threads = Some(n),
                    Err(msg) => self.problem(p, Target::Value, msg, None),
                },
                "concurrency" => match concurrency(v) {
                    Ok(n) => o.concurrency = Some(n),
                    Err(msg) => self.problem(p, Target::Value, msg, None),
                },
                "stride" => match v.as_u64() {
                    Some(n) if (1..=MAX_STRIDE).contains(&n) => o.stride = Some(n),
                    _ => self.problem(
                        p,
                        Target::Value,
                        format!(
                            "`stride` must be a whole number from 1 to 2^32, not `{}`",
                            show(v)
                        ),
                        None,
                    ),
                },
                "cycles" => {
                    let parsed = match v {
                        Value::Number(n) => Cycles::parse(&n.to_string()),
                        Value::String(s) if s.trim().eq_ignore_ascii_case("UNDEF") => {
                            Cycles::parse("UNDEF")
                        }
                        Value::String(s) => Cycles::parse(s),
                        _ => Cycles::parse(&show(v)),
                    };
                    match parsed {
                        Ok(c) if c.end() > MAX_CYCLE => self.problem(
                            p,
                            Target::Value,
                            format!("cycles end at {}, past the last cycle, 2^62", c.end()),
                            Some("run fewer cycles, or start them lower".into()),
                        ),
                        Ok(c) => o.cycles = Some(c),
                        Err(e) => self.problem(p, Target::Value, e.to_string(), None),
                    }
                }
                "duration" => match duration_of(v) {
                    Some(d) if !d.is_zero() => o.duration = Some(d),
                    got => {
                        // Why, where the text says it (audit L7: `99999999999999d`,
                        // a unit there is not, read as "more than 0").
                        let why = match (got, v.as_str()) {
                            (None, Some(t)) => crate::nanos::parse_duration_or_seconds(t)
                                .err()
                                .map(|e| format!("`duration`: {e} (a bare number is seconds)")),
                            _ => None,
                        };
                        self.problem(
                            p,
                            Target::Value,
                            why.unwrap_or_else(|| {
                                format!(
                                    "`duration` must be a time of more than 0, such as `30s`, \
                                     `10m` or `1h` (a bare number is seconds), not `{}`",
                                    show(v)
                                )
                            }),
                            None,
                        )
                    }
                },
                "tags" => match v.as_str().map(TagFilter::parse) {
                    Some(Ok(f)) => o.tags = Some(f),
                    Some(Err(e)) => self.problem(p, Target::Value, e.to_string(), None),
                    None => self.problem(
                        p,
                        Target::Value,
                        bad("is a tag filter such as `block:rampup`"),
                        None,
                    ),
                },
                // NB5's name for `rate`.
                "rate" | "cyclerate" => match RateSpec::deserialize(v.clone()) {
                    Ok(r) => o.rate = Some(r),
                    Err(e) => self.problem(p, Target::Value, e.to_string(), None),
                },
                "arrivals" => match v.as_str().map(|t| t.trim().to_ascii_lowercase()) {
                    Some(t) if t == "uniform" => o.arrivals = Some(crate::pace::Arrivals::Uniform),
                    Some(t) if t == "poisson" => {
                        o.arrivals = Some(crate::pace::Arrivals::Poisson { seed: 0 })
                    }
                    _ => self.problem(
                        p,
                        Target::Value,
                        format!("`arrivals` is `uniform` or `poisson`, not `{}`", show(v)),
                        Some(
                            "write `arrivals: poisson` for exponentially distributed gaps \
                             (with `seed: N`), or leave it out for uniform slots"
                                .into(),
                        ),
                    ),
                },
                "seed" => match v.as_u64() {
                    Some(n) => o.seed = Some(n),
                    None => self.problem(
                        p,
                        Target::Value,
                        format!(
                            "`seed` must be a whole number from 0 to 2^64-1, not `{}`",
                            show(v)
                        ),
                        None,
                    ),
                },
                "seq" => match v.as_str().map(SeqType::parse) {
                    Some(Ok(s)) => o.seq = Some(s),
                    Some(Err(e)) => {
                        let help = v.as_str().and_then(|t| {
                            suggest::did_you_mean(t, ["bucket", "concat", "interval"])
                        });
                        self.problem(p, Target::Value, e.to_string(), help)
                    }
                    None => self.problem(
                        p,
                        Target::Value,
                        bad("is `bucket`, `concat` or `interval`"),
                        None,
                    ),
                },
                "coordinate" => self.coordinate(&mut o, p, v),
                "min_members" => match v.as_u64().or_else(|| v.as_str()?.trim().parse().ok()) {
                    Some(n) if (1..=MAX_MEMBERS).contains(&n) => o.min_members = Some(n),
                    _ => self.problem(
                        p,
                        Target::Value,
                        format!(
                            "`min_members` is how many processes must join the shared \
                             schedule before it starts, 1 to {MAX_MEMBERS}, not `{}`",
                            show(v)
                        ),
                        None,
                    ),
                },
                "min_members_timeout" => match duration_of(v) {
                    Some(d) if !d.is_zero() => o.min_members_timeout = Some(d),
                    _ => self.problem(
                        p,
                        Target::Value,
                        format!(
                            "`min_members_timeout` must be a time of more than 0, such as \
                             `30s` or `5m` (a bare number is seconds), not `{}`",
                            show(v)
                        ),
                        None,
                    ),
                },
                "errors" => match v.as_str().map(|t| {
                    ErrorPolicy::parse(t)
                        .map(|p| (p, false))
                        .or_else(|e| super::params::nb5_errors(t).map(|p| (p, true)).ok_or(e))
                }) {
                    Some(Ok((e, nb5))) => {
                        // Audit p17 L11: NB5's handler words were read as a
                        // policy without a word said.
                        if nb5 {
                            self.scopes.notes.push(format!(
                                "errors `{}` (NB5's handlers) read as `{e}` \
                                 (docs/nb5.md, `errors`)",
                                v.as_str().unwrap_or_default()
                            ));
                        }
                        o.errors = Some(e);
                    }
                    Some(Err(e)) => self.problem(p, Target::Value, e.to_string(), None),
                    None => self.problem(
                        p,
                        Target::Value,
                        bad("is `count`, `stop` or `retry:N`"),
                        None,
                    ),
                },
                // In a step or `params:` of a file for another driver, a param
                // the running driver does not declare is that driver's; in a dry
                // run through `stdout` every one is, even one named like
                // stdout's own (an NB5 http step's `fields=...`), while a driver
                // standing in for the file's reads those it shares (`postgres`
                // reads jdbc's `url`).
                other
                    if foreign
                        && (self.loader.run_driver.as_deref() == Some("stdout")
                            || !declared.is_some_and(|l| l.iter().any(|k| k == other))) =>
                {
                    if !self.scopes.ignored.iter().any(|k| k == other) {
                        self.scopes.ignored.push(other.to_string());
                    }
                }
                other => {
                    let core = PARAM_KEYS.iter().copied();
                    let unknown = match declared {
                        Some(list) => !list.iter().any(|k| k == other),
                        None => suggest::closest(other, core.clone()).is_some(),
                    };
                    if unknown {
                        let mut known: Vec<&str> = core.collect();
                        if let Some(list) = declared {
                            known.extend(list.iter().map(String::as_str));
                        }
                        let help =
                            suggest::did_you_mean(other, known.iter().copied()).or_else(|| {
                                Some(format!(
                                    "known params: {}",
                                    suggest::list(known.iter().copied())
                                ))
                            });
                        let msg = match (&driver, declared) {
                            (Some(d), Some(_)) => {
                                format!("unknown param `{other}` for driver `{d}`")
                            }
                            _ => format!("unknown param `{other}`"),
                        };
                        self.problem(p, Target::Key, msg, help);
                        continue;
                    }
                    match serde_json::to_value(v) {
                        Ok(j) => {
                            o.driver_params.insert(other.to_string(), j);
                        }
                        Err(e) => self.problem(
                            p,
                            Target::Value,
                            format!("driver param `{other}` cannot be kept as a value: {e}"),
                            Some("use strings as map keys and plain values".into()),
                        ),
                    }
                }
            }
        }
        o
    }

    /// `coordinate`: the URL of a shared schedule, `redis://HOST:PORT/NAME`.
    #[cfg(feature = "redis")]
    fn coordinate(&mut self, o: &mut ParamOverrides, p: Vec<Seg>, v: &Value) {
        match v.as_str().map(crate::store::Coordinate::parse) {
            Some(Ok(c)) => o.coordinate = Some(c),
            Some(Err(e)) => self.problem(p, Target::Value, e.to_string(), None),
            None => self.problem(
                p,
                Target::Value,
                format!("`coordinate` {COORDINATE_IS}, not {}", describe(v)),
                None,
            ),
        }
    }

    /// `coordinate` needs the `redis` feature, which this build left out.
    #[cfg(not(feature = "redis"))]
    fn coordinate(&mut self, _: &mut ParamOverrides, p: Vec<Seg>, _: &Value) {
        self.problem(
            p,
            Target::Key,
            "`coordinate` needs Redis, and this paceline was built without the `redis` feature",
            Some("build it with the default features (no `--no-default-features`), or leave `coordinate` out to pace this process alone".into()),
        );
    }
}

#[cfg(feature = "redis")]
const COORDINATE_IS: &str =
    "is a URL `redis://HOST:PORT/NAME` such as `redis://127.0.0.1:6379/demo`";

/// The largest stride the engine takes (its cycle cursor moves by strides).
const MAX_STRIDE: u64 = 1 << 32;

/// A `concurrency`: a whole number from 1 to the engine's cap (the thread
/// count is checked against it when the activity starts).
pub(crate) fn concurrency(v: &Value) -> Result<usize, String> {
    let n = match v {
        Value::String(s) => s.trim().parse::<u64>().ok(),
        other => other.as_u64(),
    };
    match n {
        Some(n) if n >= 1 && n <= crate::engine::MAX_CONCURRENCY as u64 => Ok(n as usize),
        _ => Err(format!(
            "`concurrency` must be a whole number from 1 to {} (the most ops in flight, \
             spread over the threads), not `{}`",
            crate::engine::MAX_CONCURRENCY,
            show(v)
        )),
    }
}

/// A thread count in YAML, or the message saying what a thread count is.
pub(crate) fn thread_count(v: &Value) -> Result<usize, String> {
    let cores = || std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = match v {
        // NB5's `auto`: one thread per core here.
        Value::String(s) if s.eq_ignore_ascii_case("auto") => Some(cores() as u64),
        // NB5's `Nx`: N threads per core.
        Value::String(s) if s.ends_with('x') => s[..s.len() - 1]
            .parse::<u64>()
            .ok()
            .map(|m| m.saturating_mul(cores() as u64)),
        other => other.as_u64(),
    };
    // The engine's own limit, checked here so the message has the param's place.
    match n {
        Some(n) if (1..=MAX_THREADS as u64).contains(&n) => Ok(n as usize),
        _ => Err(format!(
            "`threads` must be a whole number from 1 to {MAX_THREADS}, `auto` (one per core) \
             or `Nx` (N per core), not `{}`",
            show(v)
        )),
    }
}

/// A duration in YAML: text with a unit (a bare number in text is seconds) or a number
/// of seconds.
pub(crate) fn duration_of(v: &Value) -> Option<std::time::Duration> {
    match v {
        Value::String(s) => duration(s),
        Value::Number(n) => n
            .as_f64()
            .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok()),
        _ => None,
    }
}

pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "nothing".to_string(),
        other => serde_yaml::to_string(other)
            .map(|s| s.trim_end().to_string())
            .unwrap_or_else(|_| describe(other).to_string()),
    }
}
