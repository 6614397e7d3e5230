//! Scenario steps as NoSQLBench writes them: one command string (`run
//! driver=stdout tags==block:main cycles=10`, `start ...`, `stop ALIAS`, `await
//! ALIAS`, `wait 10s`, `waitmillis 500`), split into words and read into a
//! [`Step`], and the check that a tag filter selects an op. `super::steps` reads
//! the scenario and the steps as paceline writes them.

use super::cmdline::scalar;
use super::locate::{Seg, Target};
use super::model::{Activity, ParamOverrides, Step};
use super::suggest;
use super::validate::{DURATION_HELP, Raw, Validator, duration_of};
use serde_yaml::{Mapping, Value};

/// The NB5 commands a scenario step may be.
const NB5_VERBS: &[&str] = &[
    "run",
    "start",
    "stop",
    "await",
    "wait",
    "waitmillis",
    "findmax",
    "optimo",
    "reset",
    "runapp",
];

/// What NB5's optimizer and app commands do, and paceline's nearest
/// equivalent: these steps are skipped, with this note.
fn skipped_note(command: &str) -> &'static str {
    match command {
        "findmax" => {
            "NB5's findmax steps the rate (or threads) of the running activity it names \
             through frames to the highest that holds (nbr CMD_findmax); paceline's \
             equivalent is `paceline findmax FILE tags=...` on that step's params"
        }
        "optimo" => {
            "NB5's optimo searches rate and threads of the running activity with a \
             BOBYQA optimizer (nbr CMD_optimo); paceline has no such optimizer: \
             `paceline findmax` finds the highest rate"
        }
        "reset" => {
            "NB5's reset restarts the named activity with new params, here from an \
             optimizer's result (nbr CMD_reset); run that step again with the params \
             `paceline findmax` reports"
        }
        _ => {
            "NB5's runapp runs one of its bundled Java apps (CMD_runapp), which \
             paceline does not have"
        }
    }
}

/// The words of a command with their character offsets: split at whitespace
/// outside quotes (`tags==block:"main .*"` is one word).
fn words(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None; // (byte, char)
    let mut quote = None;
    for (ci, (bi, c)) in text.char_indices().enumerate() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                start.get_or_insert((bi, ci));
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if let Some((b, ch)) = start.take() {
                    out.push((ch, &text[b..bi]));
                }
            }
            _ => {
                start.get_or_insert((bi, ci));
            }
        }
    }
    if let Some((b, ch)) = start {
        out.push((ch, &text[b..]));
    }
    out
}

impl Validator<'_> {
    /// A step written as an NB5 command: `run driver=stdout tags==block:main
    /// cycles===1000 threads=auto`, `start ...`, `stop ALIAS`, `await ALIAS`,
    /// `wait 10s` or `waitmillis 500`. `==` locks a param against the command
    /// line silently, `===` says so when the command line tries.
    ///
    /// A `run` or `start` of a named step (a key of NB5's map of steps) without an
    /// `alias` runs as `ALIAS_STEP` (`keyvalue_rampup`), so each phase has its own
    /// line in the reports.
    pub(super) fn command(
        &mut self,
        path: Vec<Seg>,
        text: &str,
        activity: &Activity,
        step_name: Option<&str>,
        started: &mut Vec<String>,
    ) -> Option<Step> {
        // NB5 refuses a command whose quotes do not pair up
        // (`NBCLIScenarioPreprocessor.splitCommand`).
        let unpaired = |q: char| {
            let mut prev = None;
            let mut n = 0;
            for c in text.chars() {
                if c == q && prev != Some('\\') {
                    n += 1;
                }
                prev = Some(c);
            }
            n % 2 == 1
        };
        if let Some(q) = ['\'', '"'].into_iter().find(|&q| unpaired(q)) {
            self.problem(
                path,
                Target::Value,
                format!(
                    "the step's command has an unpaired `{q}`: NB5 cannot run it either \
                     (\"Unclosed quote found in scenario cmd\")"
                ),
                Some("close the quote, or escape it as `\\'`".into()),
            );
            return None;
        }
        let words = words(text);
        let Some(&(verb_at, verb)) = words.first() else {
            self.problem(path, Target::Value, "the step is empty", None);
            return None;
        };
        let args = &words[1..];
        let at = |v: &mut Self, offset: usize, message: String, help: Option<String>| {
            v.problems.push(Raw {
                path: path.clone(),
                target: Target::Value,
                offset: Some(offset),
                message,
                help,
            });
        };
        match verb {
            "run" | "start" => {
                let mut m = Mapping::new();
                let mut offsets = Vec::new();
                let mut locked = std::collections::BTreeMap::new();
                for &(offset, word) in args {
                    let Some(eq) = word.find('=') else {
                        at(
                            self,
                            offset,
                            format!("`{word}` is not NAME=VALUE"),
                            Some("write params as `cycles=1000`; `==` locks one, `===` locks it and says so when overridden".into()),
                        );
                        continue;
                    };
                    let name = &word[..eq];
                    let rest = &word[eq..];
                    let equals = rest.chars().take_while(|&c| c == '=').count();
                    let value = &rest[equals..];
                    if equals > 3 {
                        at(
                            self,
                            offset,
                            format!("`{word}` has {equals} `=`"),
                            Some("use `=`, `==` or `===`".into()),
                        );
                        continue;
                    }
                    // A param the command line sets replaces an unlocked one
                    // before NB5 reads it (`NBCLIScenarioPreprocessor`): the
                    // step's own value is never read (`cycles=TEMPLATE(n,
                    // set-the-trainsize)` with `cycles=5` given).
                    // The step's driver still says whose params these are.
                    // A pair named as one of the file's template variables is
                    // not a param: it set the variable, and the step keeps its
                    // own value (`rate=TEMPLATE(rate,5000)` reads the pair's).
                    if equals == 1
                        && !matches!(name, "driver" | "type")
                        && self.loader.vars.contains_key(name)
                        && !self.file_vars.iter().any(|v| v == name)
                    {
                        continue;
                    }
                    if equals >= 2 {
                        // `cyclerate` is `rate` by another name.
                        let key = if name == "cyclerate" { "rate" } else { name };
                        locked.insert(key.to_string(), equals == 3);
                    }
                    m.insert(Value::String(name.to_string()), scalar(value));
                    offsets.push((name.to_string(), offset));
                }
                let before = self.problems.len();
                let mut o = self.params(&m, &path, Some(&activity.params.driver));
                // Problems inside the command point at their pair.
                for raw in &mut self.problems[before..] {
                    let name = raw.path.get(path.len()).and_then(|s| match s {
                        Seg::Key(k) => Some(k.clone()),
                        Seg::Index(_) => None,
                    });
                    let offset = name
                        .and_then(|n| offsets.iter().find(|(k, _)| *k == n).map(|(_, o)| *o))
                        .unwrap_or(verb_at);
                    raw.path = path.clone();
                    raw.target = Target::Value;
                    raw.offset = Some(offset);
                }
                o.locked = locked;
                let tags_at = offsets.iter().find(|(k, _)| k == "tags").map(|(_, o)| *o);
                self.check_tags(&path, tags_at.or(Some(verb_at)), &o, activity);
                if let (None, Some(step)) = (&o.alias, step_name) {
                    o.alias = Some(format!("{}_{step}", activity.params.alias));
                }
                let alias = o
                    .alias
                    .clone()
                    .unwrap_or_else(|| activity.params.alias.clone());
                started.retain(|a| *a != alias);
                started.push(alias);
                Some(if verb == "run" {
                    Step::Run(o)
                } else {
                    Step::Start(o)
                })
            }
            "stop" | "await" => {
                let named = match args {
                    [] => None,
                    [(_, a)] => Some(a.strip_prefix("alias=").unwrap_or(a).to_string()),
                    [_, (o, _), ..] => {
                        at(self, *o, format!("`{verb}` takes one alias"), None);
                        return None;
                    }
                };
                let alias = self.target_alias(named, started, path.clone(), Target::Value, verb)?;
                Some(if verb == "stop" {
                    Step::Stop { alias }
                } else {
                    Step::Await { alias }
                })
            }
            "wait" | "waitmillis" => {
                let d = match args {
                    [(_, t)] if verb == "waitmillis" => t
                        .trim_start_matches("ms=")
                        .parse::<u64>()
                        .ok()
                        .map(std::time::Duration::from_millis),
                    [(_, t)] => duration_of(&Value::String(t.to_string())),
                    _ => None,
                };
                match d {
                    Some(d) => Some(Step::Wait(d)),
                    None => {
                        at(
                            self,
                            verb_at,
                            format!("`{text}` is not a wait"),
                            Some(DURATION_HELP.into()),
                        );
                        None
                    }
                }
            }
            "findmax" | "optimo" | "reset" | "runapp" => {
                let alias = args.iter().find_map(|(_, w)| {
                    w.strip_prefix("activity=")
                        .map(|a| a.trim_start_matches('=').to_string())
                });
                if let Some(a) = &alias
                    && !started.contains(a)
                {
                    at(
                        self,
                        verb_at,
                        format!("`{verb}` acts on activity `{a}`, which no earlier step started"),
                        Some(format!(
                            "start it in an earlier step (`start alias={a} ...`); started so \
                             far: {}",
                            suggest::list(started.iter().map(String::as_str))
                        )),
                    );
                    return None;
                }
                Some(Step::Skipped {
                    command: verb.to_string(),
                    alias,
                    note: skipped_note(verb).to_string(),
                })
            }
            other => {
                let help = match suggest::closest(other, NB5_VERBS.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!(
                        "the commands are {}; NB5's scripts and other commands are not \
                         supported (see docs/nb5.md)",
                        suggest::list(NB5_VERBS.iter().copied())
                    ),
                };
                at(
                    self,
                    verb_at,
                    format!("unknown command `{other}`"),
                    Some(help),
                );
                None
            }
        }
    }

    /// Reports a tag filter that selects no op of ratio above 0.
    pub(crate) fn check_tags(
        &mut self,
        path: &[Seg],
        offset: Option<usize>,
        o: &ParamOverrides,
        activity: &Activity,
    ) {
        let Some(tags) = &o.tags else { return };
        let seq = o.seq.unwrap_or(activity.params.seq);
        if !activity.sequence_of(seq, Some(tags)).is_empty() {
            return;
        }
        let mut blocks: Vec<&str> = activity
            .ops
            .iter()
            .filter_map(|op| op.tags.get("block").map(String::as_str))
            .collect();
        blocks.dedup();
        // The shipped NB5 files write `block:main-.*` for blocks named
        // `main_read`: the other separator, when it selects ops, is the fix.
        let text = tags.to_string();
        let swapped: String = text
            .chars()
            .map(|c| match c {
                '-' => '_',
                '_' => '-',
                c => c,
            })
            .collect();
        let fix = super::params::TagFilter::parse(&swapped)
            .ok()
            .filter(|f| !activity.sequence_of(seq, Some(f)).is_empty())
            .map_or(String::new(), |_| {
                format!("; did you mean `tags={swapped}`?")
            });
        let own = o.driver.as_deref().or(self.scopes.own_driver.as_deref());
        let nb5 = match own {
            Some(d @ ("stdout" | "diag")) => format!(
                "NB5's `{d}` driver would print an op made of the file's bindings instead \
                 (its synthetic op), not this step's ops"
            ),
            _ => "NB5 cannot run this step either (every op filtered out, it stops with \
                  \"No op templates were provided\")"
                .to_string(),
        };
        self.problems.push(Raw {
            path: path.to_vec(),
            target: Target::Value,
            offset,
            message: format!("the tag filter `{tags}` selects no op with a ratio above 0; {nb5}"),
            help: Some(format!(
                "the blocks are {}: a filter's value is a regex that must match the whole tag \
                 value, as in NB5 (filter with `tags=block:NAME` or `tags=block:\"main.*\"`){fix}",
                suggest::list(blocks)
            )),
        });
    }
}
