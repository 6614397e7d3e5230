//! Before a run: the activity a command line names (a file, a bundled name, or
//! params alone), its scenario, and every run it would start prepared, so that a
//! driver's complaint shows before anything runs.

use super::args::EXIT_BAD_INPUT;
use super::bundled;
use paceline::{Activity, ActivityError, Drivers, ParamOverrides, Scenario, Step};
use std::path::Path;

/// Prints an activity's problems, one per line, and returns exit code 2.
pub fn bad_activity(e: &ActivityError) -> u8 {
    match e.problems() {
        [] => eprintln!("paceline: {e}"),
        problems => {
            for p in problems {
                if p.source == paceline::COMMAND_LINE {
                    let msg = match &p.help {
                        Some(h) => format!("{}; {h}", p.message),
                        None => p.message.clone(),
                    };
                    eprintln!("paceline: param {}: {msg}", p.line);
                } else {
                    eprintln!("{p}");
                }
            }
        }
    }
    EXIT_BAD_INPUT
}

/// Loads the activity a command line names: a file, a bundled activity's name,
/// or params alone. Returns the activity, the overrides and the scenario asked
/// for (the word after the file, `SCENARIO` or `SCENARIO.STEP`, or
/// `scenario=NAME`), cut to one step for `SCENARIO.STEP`.
///
/// `driver=NAME` names the driver that runs, whatever the file says, and the
/// file's params are checked against it; pairs named like one of the file's
/// template variables (`<<name:default>>`, `TEMPLATE(name,default)`) set it and
/// are not params.
pub fn load(
    drivers: &Drivers,
    file: Option<&Path>,
    scenario_word: Option<&str>,
    params: &[(String, String)],
) -> Result<(Activity, ParamOverrides, Option<Scenario>), u8> {
    load_focused(drivers, file, scenario_word, params, true)
}

/// [`load`], validating the whole file when `focused` is false, or else (as
/// NB5 resolves a step) only what the scenario or step asked for uses (the
/// scenario `default` when none is asked for).
pub fn load_focused(
    drivers: &Drivers,
    file: Option<&Path>,
    scenario_word: Option<&str>,
    params: &[(String, String)],
    focused: bool,
) -> Result<(Activity, ParamOverrides, Option<Scenario>), u8> {
    let mut loader = drivers.loader();
    let scenario = params
        .iter()
        .rev()
        .find(|(k, _)| k == "scenario")
        .map(|(_, v)| v.clone())
        .or(scenario_word.map(str::to_string));
    // Each pair keeps its place on the command line (1-based), so a problem
    // with one says `param N` of what the user wrote.
    let numbered: Vec<(usize, (String, String))> = params
        .iter()
        .cloned()
        .enumerate()
        .filter(|(_, (k, _))| k != "scenario")
        .map(|(i, kv)| (i + 1, kv))
        .collect();
    let pairs: Vec<(String, String)> = numbered.iter().map(|(_, kv)| kv.clone()).collect();
    let renumber = |e: ActivityError, places: &[usize]| match e {
        ActivityError::Invalid { mut problems } => {
            for p in problems
                .iter_mut()
                .filter(|p| p.source == paceline::COMMAND_LINE)
            {
                if let Some(&n) = places.get(p.line.wrapping_sub(1)) {
                    p.line = n;
                }
            }
            ActivityError::Invalid { problems }
        }
        other => other,
    };
    let places: Vec<usize> = numbered.iter().map(|(n, _)| *n).collect();
    let (activity, overrides) = match file {
        Some(path) => {
            if let Some((n, (_, d))) = numbered.iter().rev().find(|(_, (k, _))| k == "driver") {
                if drivers.get(d).is_none() {
                    let known: Vec<String> = drivers.names().map(|n| format!("`{n}`")).collect();
                    eprintln!(
                        "paceline: param {n}: unknown driver `{d}`; known drivers: {}",
                        known.join(", ")
                    );
                    return Err(EXIT_BAD_INPUT);
                }
                loader = loader.run_driver(d);
            }
            loader = loader.template_vars(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            // Validate as NB5 resolves a step: only what the step (or the
            // default scenario, when the file has one) uses.
            if focused {
                loader = loader.focus(scenario.as_deref().unwrap_or("default"));
            }
            let loaded = if !path.exists() {
                match bundled::find(&path.display().to_string()) {
                    Some((name, text)) => loader.from_str(text, &format!("{name}.yaml")),
                    None => {
                        // A URL given first (without `url=`): its password masked.
                        let word = super::args::shown_word(&path.display().to_string());
                        if let Some(near) = bundled::closest(&word) {
                            eprintln!(
                                "paceline: no file or bundled activity `{word}`; did you mean \
                                 `{near}`? (`paceline list` shows the bundled ones)"
                            );
                            return Err(EXIT_BAD_INPUT);
                        }
                        // Issue 24 item 16: not a raw "No such file" OS error.
                        eprintln!("paceline: {}", bundled::no_such(&word));
                        return Err(EXIT_BAD_INPUT);
                    }
                }
            } else {
                loader.load(path)
            };
            let a = loaded.map_err(|e| bad_activity(&e))?;
            // Template variables are set by their pairs, which are not params.
            let (rest_places, rest): (Vec<usize>, Vec<(String, String)>) = numbered
                .iter()
                .filter(|(_, (k, _))| !a.template_vars().contains(k))
                .cloned()
                .unzip();
            let o = loader
                .overrides(&rest, Some(&a.params().driver))
                .map_err(|e| bad_activity(&renumber(e, &rest_places)))?;
            (a, o)
        }
        None => loader
            .from_params(&pairs)
            .map_err(|e| bad_activity(&renumber(e, &places)))?,
    };
    let Some(name) = scenario else {
        return Ok((activity, overrides, None));
    };
    let found = activity.scenario(&name).cloned().or_else(|| {
        let (sc, step) = name.rsplit_once('.')?;
        activity.scenario(sc)?.step(step)
    });
    match found {
        Some(sc) => Ok((activity, overrides, Some(sc))),
        None => {
            let known: Vec<String> = activity
                .scenarios()
                .iter()
                .flat_map(|s| {
                    std::iter::once(format!("`{}`", s.name)).chain(
                        s.step_names
                            .iter()
                            .filter(|n| n.parse::<usize>().is_err())
                            .map(move |n| format!("`{}.{n}`", s.name)),
                    )
                })
                .collect();
            // Named by `scenario=NAME`: that param is the place.
            let place = params
                .iter()
                .rposition(|(k, _)| k == "scenario")
                .map_or(String::new(), |i| format!("param {}: ", i + 1));
            let source = if activity.source() == paceline::COMMAND_LINE {
                "the activity the params make".to_string()
            } else {
                activity.source().to_string()
            };
            eprintln!(
                "paceline: {place}no scenario `{}` in {source}; {}",
                super::args::shown_word(&name),
                if known.is_empty() {
                    "it has no scenarios: leave the scenario out".to_string()
                } else {
                    format!("its scenarios and steps: {}", known.join(", "))
                }
            );
            Err(EXIT_BAD_INPUT)
        }
    }
}

/// Refuses, as NB5 does (`SCNamedParam.override`: "Unable to reassign value
/// for locked param"), a command line that sets a param a step of `scenario`
/// locks with `===`: one line per such param, naming the fix (the step's
/// template variable when its locked value is one, read from `raw`, the file's
/// text before its variables are replaced). `==` locks stay silent.
pub(super) fn refuse_locks(
    scenario: &Scenario,
    overrides: &ParamOverrides,
    raw: Option<&str>,
    cmdline: &[(String, String)],
) -> Result<(), u8> {
    let mut refused = false;
    for (step, name) in scenario.steps.iter().zip(&scenario.step_names) {
        if let Step::Run(o) | Step::Start(o) = step {
            for key in o.overridden_locks(overrides) {
                refused = true;
                let given = cmdline
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key || (key == "rate" && k == "cyclerate"))
                    .map_or(String::new(), |(_, v)| v.clone());
                let written = raw.and_then(|t| locked_text(t, &scenario.name, name, key));
                let fix = match written.as_deref().and_then(template_var) {
                    Some(var) => format!(
                        "set the step's template variable instead: `{var}={given}` (and leave \
                         `{key}` off the command line)"
                    ),
                    None => format!(
                        "leave `{key}` off the command line (the step runs with the value it \
                         locks), or write the step with `{key}=` to let the command line set it"
                    ),
                };
                let shown = written.map_or(String::new(), |w| format!(" (`{w}`)"));
                eprintln!(
                    "paceline: scenario `{}` step `{name}` locks `{key}` with `===`{shown}: the \
                     command line's `{key}={given}` cannot replace it (NB5 stops here too: \
                     \"Unable to reassign value for locked param\"); {fix}",
                    scenario.name
                );
            }
        }
    }
    if refused { Err(EXIT_BAD_INPUT) } else { Ok(()) }
}

/// Says, for each NB5 command of `scenario` that paceline skips (`findmax`,
/// `optimo`, `reset`, `runapp`), what NB5 would do and the equivalent here; a
/// step that acts on an activity this run does not start (the step run alone)
/// is refused, as NB5 refuses it (its optimizers find a running activity:
/// `SimFrameUtils.findFlywheelActivity`).
pub(super) fn skipped_steps(scenario: &Scenario) -> Result<(), u8> {
    let mut started: Vec<String> = Vec::new();
    for (step, name) in scenario.steps.iter().zip(&scenario.step_names) {
        match step {
            Step::Run(o) | Step::Start(o) => {
                started.extend(o.alias.clone());
            }
            Step::Skipped {
                command,
                alias: Some(a),
                ..
            } if !started.contains(a) => {
                eprintln!(
                    "paceline: scenario `{}` step `{name}`: `{command}` acts on activity `{a}`, \
                     which this run does not start; NB5 cannot run this step alone either (its \
                     `{command}` acts on a running activity); run the whole scenario, whose \
                     earlier step starts `{a}`",
                    scenario.name
                );
                return Err(EXIT_BAD_INPUT);
            }
            Step::Skipped { command, note, .. } => {
                eprintln!(
                    "paceline: note: scenario `{}` step `{name}` (`{command}`) is skipped: {note}",
                    scenario.name
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// The `KEY===VALUE` word of step `step` of scenario `scenario` (or of the
/// scenario `SCENARIO` a one-step cut `SCENARIO.STEP` comes from), as the file
/// writes it.
fn locked_text(raw: &str, scenario: &str, step: &str, key: &str) -> Option<String> {
    let doc: serde_yaml::Value = serde_yaml::from_str(raw).ok()?;
    let scenarios = doc.get("scenarios")?;
    let body = scenarios.get(scenario).or_else(|| {
        let (sc, _) = scenario.rsplit_once('.')?;
        scenarios.get(sc)
    })?;
    let text = match body {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Mapping(m) => m.get(step)?.as_str()?.to_string(),
        serde_yaml::Value::Sequence(items) => items
            .get(step.parse::<usize>().ok()?.checked_sub(1)?)?
            .as_str()?
            .to_string(),
        _ => return None,
    };
    let keys = if key == "rate" {
        vec!["rate", "cyclerate"]
    } else {
        vec![key]
    };
    text.split_whitespace()
        .find(|w| {
            keys.iter()
                .any(|k| w.strip_prefix(k).is_some_and(|r| r.starts_with("===")))
        })
        .map(str::to_string)
}

/// The template variable a locked value is (`cycles===TEMPLATE(main-cycles,10)`
/// or `cycles===<<main-cycles:10>>`): `main-cycles`.
fn template_var(word: &str) -> Option<&str> {
    let value = &word[word.find("===")? + 3..];
    let rest = value
        .strip_prefix("TEMPLATE(")
        .or_else(|| value.strip_prefix("<<"))?;
    let end = rest.find([',', ')', ':', '>'])?;
    let name = rest[..end].trim();
    (!name.is_empty()).then_some(name)
}

/// Whether the run's ops write to standard output (the `stdout` driver without a
/// `filename`, or with `-`), in the activity itself or any scenario step.
pub(super) fn writes_to_stdout(activity: &Activity, overrides: &ParamOverrides) -> bool {
    activity.runs(overrides).iter().any(|(_, o)| {
        let p = activity.params().with(o);
        p.driver == "stdout"
            && p.driver_params
                .get("filename")
                .and_then(|v| v.as_str())
                .is_none_or(|f| f == "-")
    })
}

/// Prepares every run `activity` describes (the activity itself and each
/// scenario's run/start steps), so a driver's complaint shows before anything
/// runs: `FILE:LINE:COLUMN: WHAT: why` for the first that fails, or `param N:
/// WHAT: why` when it is about the command line's pair N of `cmdline`.
pub fn prepare_all(
    drivers: &Drivers,
    activity: &Activity,
    overrides: &ParamOverrides,
    cmdline: &[(String, String)],
) -> Result<(), String> {
    prepare_runs(drivers, activity, activity.runs(overrides), cmdline)
}

/// Prepares what a run of `scenario` starts (its run/start steps), or the
/// activity itself when there is none: as NB5 resolves a step, another
/// scenario's steps do not stop this one.
pub(super) fn prepare_chosen(
    drivers: &Drivers,
    activity: &Activity,
    overrides: &ParamOverrides,
    scenario: Option<&Scenario>,
    cmdline: &[(String, String)],
) -> Result<(), String> {
    let runs = match scenario {
        None => activity.runs(overrides).into_iter().take(1).collect(),
        Some(sc) => sc
            .steps
            .iter()
            .zip(&sc.step_names)
            .filter_map(|(step, name)| match step {
                Step::Run(o) | Step::Start(o) => Some((
                    format!("scenario `{}` step `{name}`", sc.name),
                    o.then(overrides),
                )),
                _ => None,
            })
            .collect(),
    };
    prepare_runs(drivers, activity, runs, cmdline)
}

fn prepare_runs(
    drivers: &Drivers,
    activity: &Activity,
    runs: Vec<(String, ParamOverrides)>,
    cmdline: &[(String, String)],
) -> Result<(), String> {
    for (what, o) in runs {
        drivers.prepare(activity, &o).map_err(|e| {
            // A driver's complaint about an op's field or a param points at it:
            // the command line's pair first (it overrides the file), then the file.
            let (at, param) = match &e {
                paceline::StartError::Driver(d) => (activity.position_of(d), param_named(d)),
                // A tag filter that selects nothing: the `tags` param's place.
                paceline::StartError::NoOps { .. } => {
                    let d = paceline::DriverError::new("", "param `tags`");
                    (activity.position_of(&d), Some("tags".to_string()))
                }
                _ => (None, None),
            };
            let given = param.and_then(|p| cmdline.iter().rposition(|(k, _)| *k == p));
            match (given, at) {
                (Some(i), _) => format!("param {}: {what}: {e}", i + 1),
                (None, Some((line, column))) => {
                    format!("{}:{line}:{column}: {what}: {e}", activity.source())
                }
                (None, None) => format!("{}: {what}: {e}", activity.source()),
            }
        })?;
    }
    Ok(())
}

/// The param a driver's message is about (`param `NAME`: ...`), if any.
fn param_named(e: &paceline::DriverError) -> Option<String> {
    let msg = e.message();
    let i = msg.find("param `")? + "param `".len();
    let len = msg[i..].find('`')?;
    Some(msg[i..i + len].to_string())
}

#[cfg(test)]
mod lock_tests {
    use super::*;

    #[test]
    fn a_locked_word_and_its_template_variable() {
        let raw = "scenarios:\n  default:\n    main: run tags==block:main cycles===TEMPLATE(main-cycles,10) threads=auto\n  s: run cycles===<<n:5>>\n";
        let w = locked_text(raw, "default", "main", "cycles").unwrap();
        assert_eq!(w, "cycles===TEMPLATE(main-cycles,10)");
        assert_eq!(template_var(&w), Some("main-cycles"));
        let w = locked_text(raw, "default.main", "main", "cycles").unwrap();
        assert_eq!(template_var(&w), Some("main-cycles"));
        assert_eq!(
            template_var(&locked_text(raw, "s", "1", "cycles").unwrap()),
            Some("n")
        );
        assert_eq!(template_var("threads===UNDEF"), None);
        assert_eq!(locked_text(raw, "default", "main", "threads"), None);
    }
}
