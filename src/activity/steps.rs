//! Scenarios: steps as paceline writes them (`start`, `{wait: 10s}`) and as
//! NoSQLBench writes them (`run driver=stdout tags==block:main cycles=10`; the
//! command strings are read in `super::steps_nb5`).

use super::focus::Scope;
use super::locate::{Seg, Target};
use super::model::{Activity, ParamOverrides, Step};
use super::suggest;
use super::validate::{
    DURATION_HELP, RAMP_HELP, VERBS, Validator, concurrency, describe, duration_of, key_text, push,
    show, thread_count,
};
use crate::pace::RateSpec;
use serde::Deserialize;
use serde_yaml::Value;

impl Validator<'_> {
    /// A scenario's steps and their names: a list of steps (named `1`, `2`, ...),
    /// an NB5 map of named steps, or one NB5 command string.
    pub(crate) fn scenario(
        &mut self,
        path: Vec<Seg>,
        v: &Value,
        activity: &Activity,
    ) -> (Vec<Step>, Vec<String>) {
        let items: Vec<(String, Vec<Seg>, &Value)> = match v {
            Value::Sequence(items) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, item)| ((i + 1).to_string(), push(&path, Seg::Index(i)), item))
                .collect(),
            Value::Mapping(m) if !m.is_empty() => self.entries(m, &path),
            Value::String(_) => vec![("1".to_string(), path.clone(), v)],
            other => {
                self.problem(
                    path,
                    Target::Value,
                    format!("a scenario is a list of steps, not {}", describe(other)),
                    Some(
                        "write steps such as `[start, {wait: 10s}, {rate: 5K}, stop]`, or NB5's \
                         named commands such as `{main: run tags==block:main cycles=1M}`"
                            .into(),
                    ),
                );
                return (Vec::new(), Vec::new());
            }
        };
        let mut started: Vec<String> = Vec::new();
        // The aliases a `start` step left running, with that step's name.
        let mut running: Vec<(String, String)> = Vec::new();
        let mut steps = Vec::new();
        let mut names = Vec::new();
        for (name, p, item) in items {
            let n0 = self.problems.len();
            let scope = Scope::Step(format!("{}.{name}", self.scopes.scenario));
            self.step_item(
                name,
                p,
                item,
                v,
                activity,
                &mut started,
                &mut running,
                &mut steps,
                &mut names,
            );
            self.scope_from(n0, scope);
        }
        (steps, names)
    }

    #[allow(clippy::too_many_arguments)]
    fn step_item(
        &mut self,
        name: String,
        p: Vec<Seg>,
        item: &Value,
        v: &Value,
        activity: &Activity,
        started: &mut Vec<String>,
        running: &mut Vec<(String, String)>,
        steps: &mut Vec<Step>,
        names: &mut Vec<String>,
    ) {
        {
            let (verb, arg, arg_path) = match item {
                Value::String(s) if s.trim().contains(char::is_whitespace) || s.contains('=') => {
                    let named = matches!(v, Value::Mapping(_)).then_some(name.as_str());
                    if let Some(step) = self.command(p.clone(), s, activity, named, started) {
                        self.still_running(&step, &name, activity, running);
                        steps.push(step);
                        names.push(name);
                    }
                    return;
                }
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
                    return;
                }
            };
            if let Some(step) = self.step(&verb, arg, arg_path, &p, item, activity, started) {
                self.still_running(&step, &name, activity, running);
                steps.push(step);
                names.push(name);
            }
        }
    }

    /// Keeps `running` (the aliases a `start` step left running, with its
    /// step's name) through `step`, the step called `name`: a `run` or
    /// `start` of an alias a `start` began, with no `await` or `stop` of it
    /// since, gets a note at load naming both steps (audit p17 L13 found the
    /// clash only when the step ran). It is not refused (review p18, M-2): the
    /// engine refuses the alias only while the first activity still runs, and
    /// whether it does cannot be known at load, even for adjacent steps (a
    /// cycle bound, a `wait`, an error that stops it may end it first). An
    /// `await` or `stop` of it ends it.
    fn still_running(
        &mut self,
        step: &Step,
        name: &str,
        activity: &Activity,
        running: &mut Vec<(String, String)>,
    ) {
        match step {
            Step::Run(o) | Step::Start(o) => {
                let alias = o.alias.as_deref().unwrap_or(&activity.params.alias);
                if let Some((_, first)) = running.iter().find(|(a, _)| a == alias) {
                    let verb = if matches!(step, Step::Run(_)) {
                        "run"
                    } else {
                        "start"
                    };
                    self.scopes.notes.push(format!(
                        "scenario `{}` step `{name}` ({verb}) is of activity `{alias}`, which \
                         step `{first}` started with no `await {alias}` or `stop {alias}` between: \
                         if `{alias}` still runs then, step `{name}` fails (two activities \
                         cannot share an alias); put `await {alias}` before step `{name}`, or \
                         give it another alias (`alias={alias}2`)",
                        self.scopes.scenario
                    ));
                    // The clash is noted once; the later step's activity is the
                    // one running after it, under the same name.
                    running.retain(|(a, _)| a != alias);
                }
                if matches!(step, Step::Start(_)) {
                    running.push((alias.to_string(), name.to_string()));
                }
            }
            Step::Await { alias } | Step::Stop { alias } => running.retain(|(a, _)| a != alias),
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        verb: &str,
        arg: &Value,
        arg_path: Vec<Seg>,
        step_path: &[Seg],
        item: &Value,
        activity: &Activity,
        started: &mut Vec<String>,
    ) -> Option<Step> {
        let params = &activity.params;
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
                    Value::Mapping(m) => {
                        let o = self.params(m, &arg_path, Some(&params.driver));
                        self.check_tags(&arg_path, None, &o, activity);
                        o
                    }
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
            "rate" | "threads" | "concurrency" => {
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
                    let count = if verb == "threads" {
                        thread_count(value)
                    } else {
                        concurrency(value)
                    };
                    match count {
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
                Some(match verb {
                    "rate" => Step::Rate { alias, spec },
                    "threads" => Step::Threads { alias, count },
                    _ => Step::Concurrency { alias, count },
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
    pub(crate) fn target_alias(
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
