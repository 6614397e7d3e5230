//! Validation: from a YAML tree to an [`Activity`], collecting every problem.

use super::Loader;
use super::bindings::{Binding, BindingSet, Template};
use super::locate::{Seg, Target};
use super::model::{Activity, Field, Op, ParamOverrides, Params, Scenario, Step};
use super::params::{Cycles, SeqType, duration};
use super::suggest;
use crate::engine::ErrorPolicy;
use crate::pace::RateSpec;
use serde::Deserialize;
use serde_yaml::{Mapping, Value};
use std::collections::BTreeMap;

/// A problem found, before its position is looked up.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    pub(crate) path: Vec<Seg>,
    pub(crate) target: Target,
    /// Character offset inside a string value (a binding expression, a template).
    pub(crate) offset: Option<usize>,
    pub(crate) message: String,
    pub(crate) help: Option<String>,
}

const TOP_KEYS: &[&str] = &["description", "params", "bindings", "ops", "scenarios"];
const PARAM_KEYS: &[&str] = &[
    "alias", "driver", "threads", "cycles", "rate", "stride", "seq", "errors",
];
const VERBS: &[&str] = &[
    "run", "start", "wait", "await", "rate", "ramp", "threads", "stop",
];

fn push(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

fn key_text(k: &Value) -> Option<String> {
    match k {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a map",
        Value::Tagged(_) => "a tagged value",
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
}

pub(crate) struct Validator<'a> {
    loader: &'a Loader,
    problems: Vec<Raw>,
}

impl<'a> Validator<'a> {
    pub(crate) fn new(loader: &'a Loader) -> Self {
        Self {
            loader,
            problems: Vec::new(),
        }
    }

    fn problem(
        &mut self,
        path: Vec<Seg>,
        target: Target,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        self.problems.push(Raw {
            path,
            target,
            offset: None,
            message: message.into(),
            help,
        });
    }

    /// Iterates a map's entries as (key text, key path, value); reports keys that
    /// are not scalars.
    fn entries<'v>(&mut self, m: &'v Mapping, path: &[Seg]) -> Vec<(String, Vec<Seg>, &'v Value)> {
        let mut out = Vec::new();
        for (k, v) in m {
            match key_text(k) {
                Some(name) => {
                    let p = push(path, Seg::Key(name.clone()));
                    out.push((name, p, v));
                }
                None => self.problem(
                    path.to_vec(),
                    Target::Value,
                    format!("a key here is {}", describe(k)),
                    Some("use plain words as keys".into()),
                ),
            }
        }
        out
    }

    /// The problems found so far.
    pub(crate) fn into_problems(self) -> Vec<Raw> {
        self.problems
    }

    pub(crate) fn activity(mut self, doc: &Value, source: &str) -> Result<Activity, Vec<Raw>> {
        let root = match doc {
            Value::Mapping(m) => m,
            Value::Null => {
                self.problem(
                    vec![],
                    Target::Value,
                    "the file is empty",
                    Some("an activity needs at least `params: {driver: ...}` and `ops:`".into()),
                );
                return Err(self.problems);
            }
            other => {
                self.problem(
                    vec![],
                    Target::Value,
                    format!("an activity file is a map, not {}", describe(other)),
                    Some(format!(
                        "use the keys {}",
                        suggest::list(TOP_KEYS.iter().copied())
                    )),
                );
                return Err(self.problems);
            }
        };
        let mut sections: BTreeMap<&str, (Vec<Seg>, &Value)> = BTreeMap::new();
        for (name, path, v) in self.entries(root, &[]) {
            match TOP_KEYS.iter().find(|k| **k == name) {
                Some(k) => {
                    sections.insert(k, (path, v));
                }
                None => {
                    let help =
                        suggest::did_you_mean(&name, TOP_KEYS.iter().copied()).or_else(|| {
                            Some(format!(
                                "the keys are {}",
                                suggest::list(TOP_KEYS.iter().copied())
                            ))
                        });
                    self.problem(path, Target::Key, format!("unknown key `{name}`"), help);
                }
            }
        }

        let description = match sections.get("description") {
            None | Some((_, Value::Null)) => None,
            Some((_, Value::String(s))) => Some(s.clone()),
            Some((p, other)) => {
                let msg = format!("`description` is text, not {}", describe(other));
                self.problem(p.clone(), Target::Value, msg, None);
                None
            }
        };

        // Params.
        let default_alias = default_alias(source);
        let mut params = Params {
            alias: default_alias,
            driver: String::new(),
            threads: 1,
            cycles: Cycles::default(),
            rate: None,
            stride: 0,
            seq: SeqType::default(),
            errors: ErrorPolicy::default(),
            driver_params: BTreeMap::new(),
        };
        let mut stride_given = false;
        match sections.get("params") {
            Some((p, Value::Mapping(m))) => {
                let o = self.params(m, p, None);
                stride_given = o.stride.is_some();
                if o.driver.is_none() {
                    self.missing_driver(p.clone(), Target::Key);
                }
                params = params.with(&o);
            }
            Some((p, Value::Null)) => self.missing_driver(p.clone(), Target::Key),
            Some((p, other)) => {
                let msg = format!("`params` is a map, not {}", describe(other));
                self.problem(p.clone(), Target::Value, msg, None);
            }
            None => self.missing_driver(vec![], Target::Value),
        }

        // Bindings.
        let mut bindings = Vec::new();
        match sections.get("bindings") {
            None | Some((_, Value::Null)) => {}
            Some((p, Value::Mapping(m))) => {
                for (name, path, v) in self.entries(m, p) {
                    bindings.push(self.binding(&name, path, v));
                }
            }
            Some((p, other)) => {
                let msg = format!(
                    "`bindings` is a map of name: expression, not {}",
                    describe(other)
                );
                self.problem(p.clone(), Target::Value, msg, None);
            }
        }
        let bindings = BindingSet::from_bindings(bindings);

        // Ops.
        let mut ops = Vec::new();
        let ops_path = match sections.get("ops") {
            Some((p, Value::Mapping(m))) if !m.is_empty() => {
                for (name, path, v) in self.entries(m, p) {
                    if let Some(op) = self.op(name, path, v, &bindings) {
                        ops.push(op);
                    }
                }
                p.clone()
            }
            Some((p, other)) => {
                let msg = format!("`ops` needs at least one op, and is {}", describe(other));
                self.problem(p.clone(), Target::Key, msg, Some(OPS_HELP.into()));
                p.clone()
            }
            None => {
                self.problem(vec![], Target::Value, "no `ops`", Some(OPS_HELP.into()));
                vec![]
            }
        };
        let ratios: Vec<u64> = ops.iter().map(|o| o.ratio).collect();
        let sequence = params.seq.sequence(&ratios);
        if sequence.is_empty() && !ops.is_empty() {
            self.problem(
                ops_path,
                Target::Key,
                "every op has ratio 0, so there is nothing to run",
                Some("give at least one op a ratio above 0".into()),
            );
        }
        if !stride_given {
            params.stride = sequence.len().max(1) as u64;
        }

        // Scenarios.
        let mut scenarios = Vec::new();
        match sections.get("scenarios") {
            None | Some((_, Value::Null)) => {}
            Some((p, Value::Mapping(m))) => {
                for (name, path, v) in self.entries(m, p) {
                    let steps = self.scenario(path, v, &params);
                    scenarios.push(Scenario { name, steps });
                }
            }
            Some((p, other)) => {
                let msg = format!(
                    "`scenarios` is a map of name: list of steps, not {}",
                    describe(other)
                );
                self.problem(p.clone(), Target::Value, msg, None);
            }
        }

        if !self.problems.is_empty() {
            return Err(self.problems);
        }
        Ok(Activity {
            source: source.to_string(),
            description,
            params,
            bindings,
            ops,
            sequence,
            scenarios,
        })
    }

    fn missing_driver(&mut self, path: Vec<Seg>, target: Target) {
        let known = suggest::list(self.loader.drivers.iter().map(String::as_str));
        self.problem(
            path,
            target,
            "no `driver` in `params`",
            Some(format!(
                "add `driver: NAME` under `params`; known drivers: {known}"
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
        for (name, p, v) in &entries {
            if name == "driver" {
                match v.as_str() {
                    Some(d) if self.loader.drivers.iter().any(|k| k == d) => {
                        o.driver = Some(d.to_string())
                    }
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
        let driver = o.driver.clone().or_else(|| base_driver.map(str::to_string));
        let declared = driver
            .as_deref()
            .and_then(|d| self.loader.driver_params.get(d));
        for (name, p, v) in entries {
            let bad = |what: &str| format!("`{name}` {what}, not {}", describe(v));
            match name.as_str() {
                "driver" => {}
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
                "stride" => match v.as_u64() {
                    Some(n) if n >= 1 => o.stride = Some(n),
                    _ => self.problem(
                        p,
                        Target::Value,
                        format!(
                            "`stride` must be a whole number of at least 1, not `{}`",
                            show(v)
                        ),
                        None,
                    ),
                },
                "cycles" => {
                    let parsed = match v {
                        Value::Number(n) => Cycles::parse(&n.to_string()),
                        Value::String(s) => Cycles::parse(s),
                        _ => Cycles::parse(&show(v)),
                    };
                    match parsed {
                        Ok(c) => o.cycles = Some(c),
                        Err(e) => self.problem(p, Target::Value, e.to_string(), None),
                    }
                }
                "rate" => match RateSpec::deserialize(v.clone()) {
                    Ok(r) => o.rate = Some(r),
                    Err(e) => self.problem(p, Target::Value, e.to_string(), None),
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
                "errors" => match v.as_str().map(ErrorPolicy::parse) {
                    Some(Ok(e)) => o.errors = Some(e),
                    Some(Err(e)) => self.problem(p, Target::Value, e.to_string(), None),
                    None => self.problem(
                        p,
                        Target::Value,
                        bad("is `count`, `stop` or `retry:N`"),
                        None,
                    ),
                },
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

    fn binding(&mut self, name: &str, path: Vec<Seg>, v: &Value) -> Binding {
        let placeholder = || {
            // Stands in for a bad binding so that templates using it do not
            // report it again; the activity is not built anyway.
            Binding::parse(name, "Identity()").unwrap_or_else(|_| unreachable!("Identity() parses"))
        };
        if !is_name(name) {
            self.problem(
                path.clone(),
                Target::Key,
                format!("`{name}` is not a usable binding name"),
                Some("use letters, digits, `_`, `-` and `.`".into()),
            );
        }
        let expr = match v {
            Value::String(s) => s.clone(),
            other => {
                self.problem(
                    path,
                    Target::Value,
                    format!(
                        "binding `{name}` is an expression string, not {}",
                        describe(other)
                    ),
                    Some("write a chain such as `Hash(); Mod(100)`".into()),
                );
                return placeholder();
            }
        };
        match Binding::parse(name, &expr) {
            Ok(b) => b,
            Err(e) => {
                self.problems.push(Raw {
                    path,
                    target: Target::Value,
                    offset: Some(e.offset()),
                    message: e.to_string(),
                    help: None,
                });
                placeholder()
            }
        }
    }

    fn op(&mut self, name: String, path: Vec<Seg>, v: &Value, set: &BindingSet) -> Option<Op> {
        match v {
            Value::String(_) => {
                let f = self.field(&path, v, set)?;
                Some(Op {
                    name,
                    ratio: 1,
                    fields: vec![("stmt".to_string(), f)],
                })
            }
            Value::Mapping(m) => {
                let mut ratio = 1;
                let mut fields = Vec::new();
                for (k, p, fv) in self.entries(m, &path) {
                    if k == "ratio" {
                        match fv.as_u64() {
                            Some(r) => ratio = r,
                            None => self.problem(
                                p,
                                Target::Value,
                                format!(
                                    "`ratio` must be a whole number of at least 0, not `{}`",
                                    show(fv)
                                ),
                                None,
                            ),
                        }
                    } else if let Some(f) = self.field(&p, fv, set) {
                        fields.push((k, f));
                    }
                }
                Some(Op {
                    name,
                    ratio,
                    fields,
                })
            }
            other => {
                self.problem(
                    path,
                    Target::Value,
                    format!("op `{name}` is {}", describe(other)),
                    Some(OP_HELP.into()),
                );
                None
            }
        }
    }

    fn field(&mut self, path: &[Seg], v: &Value, set: &BindingSet) -> Option<Field> {
        Some(match v {
            Value::String(s) => match Template::compile(s, set) {
                Ok(t) => Field::Text(t),
                Err(errs) => {
                    for e in errs {
                        self.problems.push(Raw {
                            path: path.to_vec(),
                            target: Target::Value,
                            offset: Some(e.offset()),
                            message: e.to_string(),
                            help: None,
                        });
                    }
                    return None;
                }
            },
            Value::Null | Value::Bool(_) | Value::Number(_) => {
                Field::Literal(serde_json::to_value(v).unwrap_or(serde_json::Value::Null))
            }
            Value::Sequence(items) => Field::List(
                items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| self.field(&push(path, Seg::Index(i)), item, set))
                    .collect(),
            ),
            Value::Mapping(m) => Field::Map(
                self.entries(m, path)
                    .into_iter()
                    .filter_map(|(k, p, fv)| self.field(&p, fv, set).map(|f| (k, f)))
                    .collect(),
            ),
            Value::Tagged(_) => {
                self.problem(
                    path.to_vec(),
                    Target::Value,
                    "tagged values (`!tag`) are not supported in ops",
                    Some("remove the tag".into()),
                );
                return None;
            }
        })
    }

    fn scenario(&mut self, path: Vec<Seg>, v: &Value, params: &Params) -> Vec<Step> {
        let items = match v {
            Value::Sequence(items) if !items.is_empty() => items,
            other => {
                self.problem(
                    path,
                    Target::Value,
                    format!("a scenario is a list of steps, not {}", describe(other)),
                    Some("write steps such as `[start, {wait: 10s}, {rate: 5K}, stop]`".into()),
                );
                return Vec::new();
            }
        };
        let mut started: Vec<String> = Vec::new();
        let mut steps = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = push(&path, Seg::Index(i));
            let (verb, arg, arg_path) = match item {
                Value::String(s) => (s.clone(), &Value::Null, p.clone()),
                Value::Mapping(m) if m.len() == 1 => {
                    let (k, a) = m.iter().next().unwrap_or_else(|| unreachable!("len 1"));
                    let verb = key_text(k).unwrap_or_default();
                    (verb.clone(), a, push(&p, Seg::Key(verb)))
                }
                other => {
                    self.problem(
                        p,
                        Target::Value,
                        format!(
                            "a step is one verb, as a word or a one-key map, not {}",
                            describe(other)
                        ),
                        Some(format!(
                            "the verbs are {}",
                            suggest::list(VERBS.iter().copied())
                        )),
                    );
                    continue;
                }
            };
            if let Some(step) = self.step(&verb, arg, arg_path, &p, item, params, &mut started) {
                steps.push(step);
            }
        }
        steps
    }

    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        verb: &str,
        arg: &Value,
        arg_path: Vec<Seg>,
        step_path: &[Seg],
        item: &Value,
        params: &Params,
        started: &mut Vec<String>,
    ) -> Option<Step> {
        // Where a problem with the verb itself points: the key of a one-key map,
        // or the word.
        let verb_at = |t: Target| {
            if item.is_string() {
                (step_path.to_vec(), Target::Value)
            } else {
                (arg_path.clone(), t)
            }
        };
        match verb {
            "run" | "start" => {
                let o = match arg {
                    Value::Null => ParamOverrides::default(),
                    Value::Mapping(m) => self.params(m, &arg_path, Some(&params.driver)),
                    other => {
                        let msg = format!(
                            "`{verb}` takes a map of param overrides, not {}",
                            describe(other)
                        );
                        self.problem(
                            arg_path,
                            Target::Value,
                            msg,
                            Some(format!(
                                "write `{verb}: {{threads: 4, cycles: 1M}}` or just `{verb}`"
                            )),
                        );
                        return None;
                    }
                };
                let alias = o.alias.clone().unwrap_or_else(|| params.alias.clone());
                started.retain(|a| *a != alias);
                started.push(alias);
                Some(if verb == "run" {
                    Step::Run(o)
                } else {
                    Step::Start(o)
                })
            }
            "wait" => match duration_of(arg) {
                Some(d) => Some(Step::Wait(d)),
                None => {
                    let msg = format!("`wait` takes a duration, not `{}`", show(arg));
                    self.problem(arg_path, Target::Value, msg, Some(DURATION_HELP.into()));
                    None
                }
            },
            "await" | "stop" => {
                let alias = match arg {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    other => {
                        let msg = format!("`{verb}` takes an alias, not {}", describe(other));
                        self.problem(arg_path, Target::Value, msg, None);
                        return None;
                    }
                };
                let (p, t) = verb_at(Target::Value);
                let alias = self.target_alias(alias, started, p, t, verb)?;
                Some(if verb == "await" {
                    Step::Await { alias }
                } else {
                    Step::Stop { alias }
                })
            }
            "rate" | "threads" => {
                let (alias, value, vpath) = match arg {
                    Value::Mapping(m) => {
                        let want = if verb == "rate" { "spec" } else { "count" };
                        let mut alias = None;
                        let mut value = None;
                        for (k, kp, kv) in self.entries(m, &arg_path) {
                            if k == "alias" {
                                alias = kv.as_str().map(str::to_string);
                            } else if k == want {
                                value = Some((kv, kp));
                            } else {
                                let help = suggest::did_you_mean(&k, ["alias", want])
                                    .or(Some(format!("use `alias` and `{want}`")));
                                self.problem(
                                    kp,
                                    Target::Key,
                                    format!("unknown key `{k}` in `{verb}`"),
                                    help,
                                );
                            }
                        }
                        match value {
                            Some((v, vp)) => (alias, v, vp),
                            None => {
                                self.problem(
                                    arg_path,
                                    Target::Value,
                                    format!("`{verb}` needs `{want}`"),
                                    None,
                                );
                                return None;
                            }
                        }
                    }
                    other => (None, other, arg_path.clone()),
                };
                let step = if verb == "rate" {
                    match RateSpec::deserialize(value.clone()) {
                        Ok(spec) => Some(spec),
                        Err(e) => {
                            self.problem(vpath, Target::Value, e.to_string(), None);
                            None
                        }
                    }
                    .map(|spec| (spec, 0))
                } else {
                    match thread_count(value) {
                        Ok(n) => Some((RateSpec::paused(), n)),
                        Err(msg) => {
                            self.problem(vpath, Target::Value, msg, None);
                            None
                        }
                    }
                };
                let (p, t) = verb_at(Target::Key);
                let alias = self.target_alias(alias, started, p, t, verb)?;
                let (spec, count) = step?;
                Some(if verb == "rate" {
                    Step::Rate { alias, spec }
                } else {
                    Step::Threads { alias, count }
                })
            }
            "ramp" => {
                let Value::Mapping(m) = arg else {
                    self.problem(
                        arg_path,
                        Target::Value,
                        format!("`ramp` takes a map, not {}", describe(arg)),
                        Some(RAMP_HELP.into()),
                    );
                    return None;
                };
                let (mut alias, mut to, mut over) = (None, None, None);
                let mut ok = true;
                for (k, kp, kv) in self.entries(m, &arg_path) {
                    match k.as_str() {
                        "alias" => alias = kv.as_str().map(str::to_string),
                        "to" => match RateSpec::deserialize(kv.clone()) {
                            Ok(s) => to = Some(s),
                            Err(e) => {
                                ok = false;
                                self.problem(kp, Target::Value, e.to_string(), None);
                            }
                        },
                        "over" => match duration_of(kv) {
                            Some(d) => over = Some(d),
                            None => {
                                ok = false;
                                let msg = format!("`over` takes a duration, not `{}`", show(kv));
                                self.problem(kp, Target::Value, msg, Some(DURATION_HELP.into()));
                            }
                        },
                        other => {
                            ok = false;
                            let help = suggest::did_you_mean(other, ["to", "over", "alias"])
                                .or(Some(RAMP_HELP.into()));
                            self.problem(
                                kp,
                                Target::Key,
                                format!("unknown key `{other}` in `ramp`"),
                                help,
                            );
                        }
                    }
                }
                let (p, t) = verb_at(Target::Key);
                let alias = self.target_alias(alias, started, p.clone(), t, verb)?;
                match (to, over) {
                    (Some(to), Some(over)) if ok => Some(Step::Ramp { alias, to, over }),
                    (to, _) => {
                        if ok {
                            let missing = if to.is_none() { "to" } else { "over" };
                            self.problem(
                                p,
                                t,
                                format!("`ramp` needs `{missing}`"),
                                Some(RAMP_HELP.into()),
                            );
                        }
                        None
                    }
                }
            }
            other => {
                let help = suggest::did_you_mean(other, VERBS.iter().copied()).or_else(|| {
                    Some(format!(
                        "the verbs are {}",
                        suggest::list(VERBS.iter().copied())
                    ))
                });
                let (p, t) = verb_at(Target::Key);
                self.problem(p, t, format!("unknown step `{other}`"), help);
                None
            }
        }
    }

    /// The alias a control step acts on: the one named (which must have been
    /// started earlier in the scenario) or the most recently started.
    fn target_alias(
        &mut self,
        named: Option<String>,
        started: &[String],
        path: Vec<Seg>,
        target: Target,
        verb: &str,
    ) -> Option<String> {
        match named {
            Some(a) if started.contains(&a) => Some(a),
            Some(a) => {
                let known = started.iter().map(String::as_str);
                let help = suggest::did_you_mean(&a, known.clone())
                    .unwrap_or_else(|| format!("started so far: {}", suggest::list(known)));
                self.problem(
                    path,
                    target,
                    format!("`{verb}` names `{a}`, which no earlier step started"),
                    Some(help),
                );
                None
            }
            None => match started.last() {
                Some(a) => Some(a.clone()),
                None => {
                    self.problem(
                        path,
                        target,
                        format!("`{verb}` comes before any activity was started in this scenario"),
                        Some("add a `start` (or `run`) step before it".into()),
                    );
                    None
                }
            },
        }
    }
}

const OPS_HELP: &str = "add `ops:` with at least one op, such as `ops: {read: 'GET {key}'}`";
const OP_HELP: &str = "an op is a string (its `stmt`) or a map of fields with an optional `ratio`";
const DURATION_HELP: &str =
    "write a number with a unit: `500ms`, `30s`, `2m`, `1h` (a bare number is seconds)";
const RAMP_HELP: &str = "write `ramp: {to: 50K, over: 30s}` (and `alias:` to pick an activity)";

/// A thread count in YAML, or the message saying what a thread count is.
fn thread_count(v: &Value) -> Result<usize, String> {
    match v.as_u64() {
        Some(n @ 1..=65_536) => Ok(n as usize),
        _ => Err(format!(
            "`threads` must be a whole number from 1 to 65536, not `{}`",
            show(v)
        )),
    }
}

/// A duration in YAML: text with a unit (a bare number in text is seconds) or a number
/// of seconds.
fn duration_of(v: &Value) -> Option<std::time::Duration> {
    match v {
        Value::String(s) => duration(s),
        Value::Number(n) => n
            .as_f64()
            .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok()),
        _ => None,
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "nothing".to_string(),
        other => serde_yaml::to_string(other)
            .map(|s| s.trim_end().to_string())
            .unwrap_or_else(|_| describe(other).to_string()),
    }
}

/// The file name without directories or extension, made into an alias.
fn default_alias(source: &str) -> String {
    let stem = std::path::Path::new(source)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    let alias: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if alias.is_empty() {
        "activity".to_string()
    } else {
        alias
    }
}
