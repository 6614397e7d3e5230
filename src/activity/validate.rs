//! Validation: from a YAML tree to an [`Activity`], collecting every problem.

use super::Loader;
use super::bindings::{Binding, BindingSet};
use super::focus::{Scope, Scopes};
use super::locate::{Seg, Target};
use super::model::{Activity, Op, ParamOverrides, Params, Scenario, Step};
use super::params::{Cycles, SeqType, TagFilter, duration};
use super::suggest;
use crate::engine::{ErrorPolicy, MAX_CYCLE, MAX_THREADS};
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

const TOP_KEYS: &[&str] = &[
    "description",
    "params",
    "bindings",
    "ops",
    "scenarios",
    "blocks",
    "statements",
    "tags",
    "min_version",
    "thresholds",
];
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
pub(crate) const VERBS: &[&str] = &[
    "run",
    "start",
    "wait",
    "await",
    "rate",
    "ramp",
    "threads",
    "concurrency",
    "stop",
];

pub(crate) fn push(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

pub(crate) fn key_text(k: &Value) -> Option<String> {
    match k {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(crate) fn describe(v: &Value) -> &'static str {
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

pub(crate) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
}

pub(crate) struct Validator<'a> {
    pub(crate) loader: &'a Loader,
    pub(crate) problems: Vec<Raw>,
    /// What each problem belongs to, for per-step validation (`focus.rs`).
    pub(crate) scopes: Scopes,
}

impl<'a> Validator<'a> {
    pub(crate) fn new(loader: &'a Loader) -> Self {
        Self {
            loader,
            problems: Vec::new(),
            scopes: Scopes::default(),
        }
    }

    pub(crate) fn problem(
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
    pub(crate) fn entries<'v>(
        &mut self,
        m: &'v Mapping,
        path: &[Seg],
    ) -> Vec<(String, Vec<Seg>, &'v Value)> {
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
                                "the keys are {} (docs/nb5.md lists the NB5 keys paceline reads)",
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
            concurrency: None,
            cycles: Cycles::default(),
            cycles_given: false,
            duration: None,
            rate: None,
            arrivals: crate::pace::Arrivals::Uniform,
            seed: 0,
            stride: 0,
            seq: SeqType::default(),
            errors: ErrorPolicy::default(),
            tags: None,
            #[cfg(feature = "redis")]
            coordinate: None,
            min_members: None,
            min_members_timeout: None,
            driver_params: BTreeMap::new(),
        };
        let mut stride_given = false;
        // Where a missing driver is reported, if it turns out to be missing.
        let mut no_driver: Option<(Vec<Seg>, Target)> = None;
        match sections.get("params") {
            Some((p, Value::Mapping(m))) => {
                let o = self.params(m, p, None);
                stride_given = o.stride.is_some();
                if o.driver.is_none() {
                    no_driver = Some((p.clone(), Target::Key));
                }
                params = params.with(&o);
            }
            Some((p, Value::Null)) => no_driver = Some((p.clone(), Target::Key)),
            Some((p, other)) => {
                let msg = format!("`params` is a map, not {}", describe(other));
                self.problem(p.clone(), Target::Value, msg, None);
            }
            None => no_driver = Some((vec![], Target::Value)),
        }
        if let Some(d) = &self.loader.run_driver {
            // The command line names the driver that runs: it is the activity's.
            params.driver = d.clone();
        }

        // Bindings: the file's, then every block's and op's, then inline ones.
        let mut bindings = Vec::new();
        match sections.get("bindings") {
            None | Some((_, Value::Null)) => {}
            Some((p, Value::Mapping(m))) => {
                for (name, path, v) in self.entries(m, p) {
                    let n0 = self.problems.len();
                    bindings.push(self.binding(&name, path, v));
                    self.scope_from(n0, Scope::Binding(name));
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
        let doc_tags = match sections.get("tags") {
            None => BTreeMap::new(),
            Some((_, v)) if super::blocks::tag_map(v).is_some() => {
                super::blocks::tag_map(v).unwrap_or_default()
            }
            Some((p, other)) => {
                let msg = format!("`tags` is a map of name: value, not {}", describe(other));
                self.problem(p.clone(), Target::Value, msg, None);
                BTreeMap::new()
            }
        };
        let mut notices = Vec::new();
        let top_ops = match (sections.get("ops"), sections.get("statements")) {
            (Some((p, _)), Some((q, _))) => {
                self.problem(
                    q.clone(),
                    Target::Key,
                    "both `ops` and `statements`",
                    Some("`statements` is the older name of `ops`: keep one".into()),
                );
                Some((p.clone(), sections["ops"].1))
            }
            (Some((p, v)), None) | (None, Some((p, v))) => Some((p.clone(), *v)),
            (None, None) => None,
        };
        let blocks = sections.get("blocks").map(|(p, v)| (p.clone(), *v));
        // NB5's stdout makes one op of the bindings of a file without ops.
        let synthetic: Value;
        let top_ops = match (top_ops, &blocks, sections.get("bindings")) {
            (None, None, Some((_, Value::Mapping(bm)))) => {
                let sc = sections.get("scenarios").map(|(_, v)| *v);
                let focus = self.loader.focus.as_deref();
                let param = |k| super::synth::step_param(sc, focus, k);
                let stmt = super::synth::stmt(
                    &super::synth::names(bm),
                    param("format").as_deref(),
                    param("bindings").as_deref(),
                );
                match stmt {
                    Some(stmt) => {
                        notices.push(
                            "the file has no ops: its one op, `synthetic`, shows its bindings, \
                             as NB5's stdout driver makes it"
                                .to_string(),
                        );
                        let mut m = Mapping::new();
                        m.insert(Value::from("synthetic"), Value::from(stmt));
                        synthetic = Value::Mapping(m);
                        Some((vec![], &synthetic))
                    }
                    None => None,
                }
            }
            (t, _, _) => t,
        };
        if top_ops.is_none() && blocks.is_none() {
            self.problem(vec![], Target::Value, "no `ops`", Some(OPS_HELP.into()));
        }
        let drafts = self.op_drafts(top_ops, blocks, &doc_tags, &mut bindings);
        self.inline_bindings(&drafts, &mut bindings);
        let bindings = BindingSet::from_bindings(bindings);

        // Ops.
        let mut ops: Vec<Op> = Vec::new();
        let mut op_paths = Vec::new();
        let mut names = std::collections::HashSet::new();
        for d in drafts {
            let path = d.path().to_vec();
            let n0 = self.problems.len();
            let name = d.name().to_string();
            let built = self.draft_op(d, &bindings);
            self.scope_from(n0, Scope::Op(name.clone()));
            if let Some(op) = built {
                if !names.insert(op.name.clone()) {
                    let msg = format!("a second op called `{}`", op.name);
                    self.problem(
                        path,
                        Target::Key,
                        msg,
                        Some("give each op its own name".into()),
                    );
                    self.scope_from(self.problems.len() - 1, Scope::Op(name));
                    continue;
                }
                ops.push(op);
                op_paths.push(path);
            }
        }
        // The sequence is bounded before it is built: the first op that takes
        // the sum of ratios past the bound is named (issue 25, item 8).
        let mut total = 0u64;
        let mut ratios: Vec<u64> = Vec::with_capacity(ops.len());
        for (op, path) in ops.iter().zip(&op_paths) {
            total = total.saturating_add(op.ratio);
            if total > MAX_SEQUENCE {
                self.problem(
                    path.clone(),
                    Target::Key,
                    format!(
                        "op `{}`: the ratios add up to more than {MAX_SEQUENCE}, the longest \
                         op sequence",
                        op.name
                    ),
                    Some("use smaller ratios: only their proportions matter".into()),
                );
                ratios.clear();
                break;
            }
            ratios.push(op.ratio);
        }
        let too_long = total > MAX_SEQUENCE;
        let sequence = params.seq.sequence(&ratios);
        if sequence.is_empty() && !ops.is_empty() && !too_long {
            let at = op_paths
                .first()
                .map(|p| p[..p.len().saturating_sub(1)].to_vec())
                .unwrap_or_default();
            self.problem(
                at,
                Target::Key,
                "every op has ratio 0, so there is nothing to run",
                Some("give at least one op a ratio above 0".into()),
            );
        }
        if !stride_given {
            params.stride = sequence.len().max(1) as u64;
        }
        let activity_for_steps = Activity {
            source: source.to_string(),
            description: None,
            params: params.clone(),
            bindings: BindingSet::default(),
            ops: ops.clone(),
            sequence: Vec::new(),
            scenarios: Vec::new(),
            stride_given,
            template_vars: Vec::new(),
            text: String::new(),
            op_paths: Vec::new(),
            notices: Vec::new(),
            thresholds: Vec::new(),
        };

        let thresholds = match sections.get("thresholds") {
            None | Some((_, Value::Null)) => Vec::new(),
            Some((p, v)) => self.thresholds(p, v),
        };

        // Scenarios.
        let mut scenarios = Vec::new();
        match sections.get("scenarios") {
            None | Some((_, Value::Null)) => {}
            Some((p, Value::Mapping(m))) => {
                for (name, path, v) in self.entries(m, p) {
                    self.scopes.scenario = name.clone();
                    let (steps, step_names) = self.scenario(path, v, &activity_for_steps);
                    scenarios.push(Scenario {
                        name,
                        steps,
                        step_names,
                    });
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
        // A file may leave the driver to its scenario steps (NB5's `run
        // driver=...`) or to the command line.
        let steps_name_drivers = !scenarios.is_empty()
            && scenarios.iter().flat_map(|s| &s.steps).all(|st| match st {
                Step::Run(o) | Step::Start(o) => o.driver.is_some(),
                _ => true,
            });
        if let Some((p, t)) = no_driver
            && self.loader.run_driver.is_none()
            && !steps_name_drivers
        {
            self.missing_driver(p, t);
        }

        if !self.scopes.ignored.is_empty() {
            notices.push(format!(
                "driver `{}` runs this file's ops for another driver: its params {} are not read",
                params.driver,
                suggest::list(self.scopes.ignored.iter().map(String::as_str))
            ));
        }
        if !self.problems.is_empty() {
            let kept = self.focused_problems(&scenarios, params.tags.as_ref());
            if !kept.is_empty() {
                return Err(kept);
            }
        }
        Ok(Activity {
            source: source.to_string(),
            description,
            params,
            bindings,
            ops,
            sequence,
            scenarios,
            stride_given,
            template_vars: Vec::new(),
            text: String::new(),
            op_paths,
            notices,
            thresholds,
        })
    }

    /// `thresholds:`: a list of expressions (`response.p99<50ms`), or maps
    /// `{expr: EXPR, abort_on_fail: BOOL}`; a bad one is reported at its place in
    /// the expression.
    fn thresholds(&mut self, path: &[Seg], v: &Value) -> Vec<super::thresholds::Threshold> {
        let how = "write a list of expressions such as `- response.p99<50ms` or \
                   `- {expr: 'errors<1%', abort_on_fail: true}`";
        let Value::Sequence(items) = v else {
            self.problem(
                path.to_vec(),
                Target::Value,
                format!("`thresholds` is a list, not {}", describe(v)),
                Some(how.into()),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = push(path, Seg::Index(i));
            let (text, text_path, abort) = match item {
                Value::String(s) => (s.clone(), at.clone(), false),
                Value::Mapping(m) => {
                    let mut expr = None;
                    let mut abort = false;
                    for (name, p, v) in self.entries(m, &at) {
                        match (name.as_str(), v) {
                            ("expr", Value::String(s)) => expr = Some((s.clone(), p)),
                            ("abort_on_fail", Value::Bool(b)) => abort = *b,
                            ("expr" | "abort_on_fail", other) => {
                                let msg = format!(
                                    "`{name}` is {}, not {}",
                                    if name == "expr" {
                                        "text"
                                    } else {
                                        "true or false"
                                    },
                                    describe(other)
                                );
                                self.problem(p, Target::Value, msg, None);
                            }
                            _ => self.problem(
                                p,
                                Target::Key,
                                format!("unknown key `{name}` in a threshold"),
                                Some("a threshold has `expr` and `abort_on_fail`".into()),
                            ),
                        }
                    }
                    match expr {
                        Some((e, p)) => (e, p, abort),
                        None => {
                            self.problem(
                                at,
                                Target::Value,
                                "a threshold without `expr`",
                                Some(how.into()),
                            );
                            continue;
                        }
                    }
                }
                other => {
                    let msg = format!("a threshold is an expression, not {}", describe(other));
                    self.problem(at, Target::Value, msg, Some(how.into()));
                    continue;
                }
            };
            match super::thresholds::Threshold::parse(&text) {
                Ok(mut t) => {
                    t.abort_on_fail |= abort;
                    out.push(t);
                }
                Err(e) => {
                    // The offset is within the trimmed expression.
                    let lead = text.chars().take_while(|c| c.is_whitespace()).count();
                    self.problems.push(Raw {
                        path: text_path,
                        target: Target::Value,
                        offset: Some(lead + e.at),
                        message: format!("bad threshold `{}`: {}", e.expr, e.message),
                        help: None,
                    });
                }
            }
        }
        out
    }

    fn missing_driver(&mut self, path: Vec<Seg>, target: Target) {
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
        for (name, p, v) in &entries {
            if name == "driver" {
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
                    _ => self.problem(
                        p,
                        Target::Value,
                        format!(
                            "`duration` must be a time of more than 0, such as `30s`, `10m` \
                             or `1h` (a bare number is seconds), not `{}`",
                            show(v)
                        ),
                        None,
                    ),
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
                    ErrorPolicy::parse(t).or_else(|e| super::params::nb5_errors(t).ok_or(e))
                }) {
                    Some(Ok(e)) => o.errors = Some(e),
                    Some(Err(e)) => self.problem(p, Target::Value, e.to_string(), None),
                    None => self.problem(
                        p,
                        Target::Value,
                        bad("is `count`, `stop` or `retry:N`"),
                        None,
                    ),
                },
                other if foreign && !declared.is_some_and(|l| l.iter().any(|k| k == other)) => {
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

    pub(crate) fn binding(&mut self, name: &str, path: Vec<Seg>, v: &Value) -> Binding {
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
}

pub(crate) const OPS_HELP: &str =
    "add `ops:` with at least one op, such as `ops: {read: 'GET {key}'}`";
pub(crate) const OP_HELP: &str =
    "an op is a string (its `stmt`) or a map of fields with an optional `ratio`";
pub(crate) const DURATION_HELP: &str =
    "write a number with a unit: `500ms`, `30s`, `2m`, `1h` (a bare number is seconds)";
#[cfg(feature = "redis")]
const COORDINATE_IS: &str =
    "is a URL `redis://HOST:PORT/NAME` such as `redis://127.0.0.1:6379/demo`";
pub(crate) const RAMP_HELP: &str =
    "write `ramp: {to: 50K, over: 30s}` (and `alias:` to pick an activity)";

/// The largest stride the engine takes (its cycle cursor moves by strides).
const MAX_STRIDE: u64 = 1 << 32;

/// The longest op sequence (the sum of the ops' ratios): a sequence is held in
/// memory, one entry per slot.
pub(crate) const MAX_SEQUENCE: u64 = 1_000_000;

/// A thread count in YAML, or the message saying what a thread count is.
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
