//! Validation: from a YAML tree to an [`Activity`], collecting every problem.
//!
//! This file holds the walk over the document's sections; params are checked in
//! `validate_params.rs`, bindings and thresholds in `validate_items.rs`, ops and
//! blocks in `blocks.rs`, scenario steps in `steps.rs`.

use super::Loader;
use super::bindings::BindingSet;
use super::focus::{Scope, Scopes};
use super::locate::{Seg, Target};
use super::model::{Activity, Op, Params, Scenario, Step};
use super::params::{Cycles, SeqType};
use super::suggest;
use crate::engine::ErrorPolicy;
use serde_yaml::{Mapping, Value};
use std::collections::BTreeMap;

pub(crate) use super::validate_params::{concurrency, duration_of, show, thread_count};

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
    "op",
    "operation",
    "stmt",
    "statement",
    "tags",
    "min_version",
    "thresholds",
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
    /// The template variables the file uses: a command-line pair of one of these
    /// names sets the variable and is not a param (`steps_nb5.rs`).
    pub(crate) file_vars: Vec<String>,
}

impl<'a> Validator<'a> {
    pub(crate) fn new(loader: &'a Loader) -> Self {
        Self {
            loader,
            problems: Vec::new(),
            scopes: Scopes::default(),
            file_vars: Vec::new(),
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
                self.scopes.own_driver = o.driver.clone();
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
        // NB5's names for a section of ops (`OpsOwner`): one of them.
        let mut named = super::blocks::OPS_KEYS
            .iter()
            .filter_map(|k| sections.get(*k).map(|(p, v)| (*k, p.clone(), *v)));
        let top_ops = named.next().map(|(first, p, v)| {
            for (k, q, _) in named {
                self.problem(
                    q,
                    Target::Key,
                    format!("both `{first}` and `{k}`"),
                    Some(format!(
                        "`{first}` and `{k}` both name the file's ops (`ops` is the usual \
                         name): keep one"
                    )),
                );
            }
            (p, v)
        });
        let blocks = sections.get("blocks").map(|(p, v)| (p.clone(), *v));
        // NB5's stdout makes one op of the bindings of a file without ops.
        let synthetic: Value;
        let top_ops = match (top_ops, &blocks, sections.get("bindings")) {
            (None, None, Some((_, Value::Mapping(bm)))) => {
                let sc = sections.get("scenarios").map(|(_, v)| *v);
                let focus = self.loader.focus.as_deref();
                // The command line's pair, else the step's (NB5 lets the
                // command line override a step's unlocked params).
                let vars = &self.loader.vars;
                let param = |k| {
                    vars.get(k)
                        .cloned()
                        .or_else(|| super::synth::step_param(sc, focus, k))
                };
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
            // NB5 stops too: no op templates, and none its stdout driver can
            // make without bindings (`Activity.loadOpTemplates`).
            let msg = if sections.contains_key("bindings") {
                "no `ops`"
            } else {
                "no `ops` and no `bindings`: NB5 cannot run this file either (\"No op \
                 templates were provided\")"
            };
            self.problem(vec![], Target::Value, msg, Some(OPS_HELP.into()));
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

        notices.append(&mut self.scopes.notes);
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
}

pub(crate) const OPS_HELP: &str =
    "add `ops:` with at least one op, such as `ops: {read: 'GET {key}'}`";
pub(crate) const OP_HELP: &str =
    "an op is a string (its `stmt`) or a map of fields with an optional `ratio`";
pub(crate) const DURATION_HELP: &str =
    "write a number with a unit: `500ms`, `30s`, `2m`, `1h` (a bare number is seconds)";
pub(crate) const RAMP_HELP: &str =
    "write `ramp: {to: 50K, over: 30s}` (and `alias:` to pick an activity)";

/// The longest op sequence (the sum of the ops' ratios): a sequence is held in
/// memory, one entry per slot.
pub(crate) const MAX_SEQUENCE: u64 = 1_000_000;

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
