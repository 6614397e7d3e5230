//! `paceline check`: validate a file and print the plan, running nothing.

use super::args::{EXIT_BAD_INPUT, EXIT_OK};
use super::load::{load_focused, prepare_all};
use paceline::{Drivers, OpPlan, ParamOverrides, Step};
use std::fmt::Write as _;
use std::path::Path;

/// How many cycles of binding values the plan shows.
const SHOWN_CYCLES: u64 = 3;

/// `paceline check [FILE] [NAME=VALUE]...`: prints the plan on stdout, or every
/// problem on stderr (exit 2). Without a file the params say everything, as
/// for `run`.
pub fn check(file: Option<&Path>, params: &[(String, String)]) -> u8 {
    let drivers = Drivers::builtin();
    let (activity, overrides, _) = match load_focused(&drivers, file, None, params, false) {
        Ok(x) => x,
        Err(code) => {
            if let Some(file) = file {
                per_step(&drivers, file, params);
            }
            return code;
        }
    };
    // Prepare every run the file describes: the activity itself and each
    // scenario's run/start steps, so a driver's complaint shows now.
    if let Err(m) = prepare_all(&drivers, &activity, &overrides, params) {
        if m.starts_with("param ") {
            eprintln!("paceline: {m}");
        } else {
            eprintln!("{m}");
        }
        return EXIT_BAD_INPUT;
    }
    let mut out = super::out::Stdout::new();
    out.write(&plan(&activity, &overrides, params));
    out.exit(EXIT_OK)
}

/// After a file failed as a whole: which of its scenario steps load on their
/// own (as NB5 resolves a step: what the step uses), and the first problem of
/// each that does not.
fn per_step(drivers: &Drivers, file: &Path, params: &[(String, String)]) {
    let mut loader = drivers.loader();
    if let Some((_, d)) = params.iter().rev().find(|(k, _)| k == "driver") {
        loader = loader.run_driver(d);
    }
    loader = loader.template_vars(params.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let Ok(steps) = loader.step_names(file) else {
        return;
    };
    if steps.is_empty() {
        return;
    }
    eprintln!("per step (each validated for what it uses, as NB5 resolves a step):");
    for step in steps {
        match loader.clone().focus(&step).load(file) {
            Ok(_) => eprintln!("  {step}: valid"),
            Err(e) => {
                let n = e.problems().len();
                let first = e
                    .problems()
                    .first()
                    .map(|p| p.to_string())
                    .unwrap_or_default();
                eprintln!("  {step}: {n} problem(s); first: {first}");
            }
        }
    }
}

/// The plan as text; `params` are the command line's `NAME=VALUE` pairs
/// (template variables among them), whose secrets it hides with the rest.
pub fn plan(
    activity: &paceline::Activity,
    overrides: &ParamOverrides,
    params: &[(String, String)],
) -> String {
    let plan = OpPlan::new(activity, overrides);
    let p = plan.params();
    let mut out = String::new();
    let _ = writeln!(out, "{}: valid", activity.source());
    if let Some(d) = super::bundled::one_line(activity) {
        let _ = writeln!(out, "  {d}");
    }
    // In thread scope each thread's schedule runs at the spec's rate: the
    // plan says so, and the total the reports will show (`total_rate`).
    let rate = p
        .rate
        .map_or("unpaced".to_string(), |r| match r.scope_value() {
            paceline::Scope::Thread => format!(
                "{r} (per thread: {}/s in total over {} thread(s))",
                super::report::units::rate(paceline::total_rate(&r, p.threads)),
                p.threads
            ),
            paceline::Scope::Activity => r.to_string(),
        });
    let driver = if p.driver.is_empty() {
        "(named by each scenario step)"
    } else {
        p.driver.as_str()
    };
    let _ = writeln!(
        out,
        "activity `{}`: driver {driver}, {} thread(s), cycles {} ({}), rate {rate}, stride {}, seq {}, errors {}",
        p.alias,
        p.threads,
        p.cycles,
        p.cycles.len(),
        p.stride,
        p.seq,
        p.errors
    );
    #[cfg(feature = "redis")]
    if let Some(c) = &p.coordinate {
        let _ = writeln!(
            out,
            "  shared schedule {c}: the rate is the sum over every process in it (checked, not contacted)"
        );
    }
    let _ = writeln!(out, "ops (sequence of {}):", plan.sequence().len());
    for (i, op) in plan.ops().iter().enumerate() {
        let slots = plan.sequence().iter().filter(|&&s| s == i).count();
        let tags: Vec<String> = op
            .tags
            .iter()
            // The automatic ones say nothing a file without blocks wrote.
            .filter(|(k, v)| match k.as_str() {
                "name" | "op" => false,
                "block" => *v != "block0",
                _ => true,
            })
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        let _ = writeln!(
            out,
            "  {:<12} ratio {:<4} ({slots} of {}){}",
            op.name,
            op.ratio,
            plan.sequence().len(),
            if tags.is_empty() {
                String::new()
            } else {
                format!("  tags {}", tags.join(" "))
            }
        );
    }
    // A binding named for a secret is written `***` where an op puts it: the
    // ops render from a copy of the set that gives `***` for it. Its values
    // are searched for nowhere else, so a short one never hides a host's
    // digits or a port.
    let shown = masked_bindings(plan.bindings());
    let mut secrets = Secrets::of(&p.driver_params, params);
    // What the masking of the rendered ops hides (a URL's password, a field
    // named for a secret) is hidden in the bindings' lines and the other ops
    // as well: learned from every op of the plan, not only those the first
    // cycles draw.
    for op in plan.ops() {
        for c in 0..SHOWN_CYCLES {
            secrets.learn(&op.render_json(p.cycles.start() + c, &shown));
        }
    }
    if !plan.bindings().is_empty() {
        let _ = writeln!(out, "bindings, first {SHOWN_CYCLES} cycles:");
        for (i, name) in plan.bindings().names().enumerate() {
            let values: Vec<String> = (0..SHOWN_CYCLES)
                .map(|c| plan.bindings().eval(i, p.cycles.start() + c).to_string())
                .collect();
            let expression = plan.bindings().at(i).expression();
            let (b, values) = if is_secret_binding(name) {
                // Its own values are hidden in its expression (a literal).
                let stars = vec!["***".to_string(); values.len()];
                let mut own = secrets.clone();
                own.add(values, 1);
                (own.hide(expression), stars)
            } else {
                (
                    secrets.hide(expression),
                    values.iter().map(|v| secrets.hide(v)).collect(),
                )
            };
            let _ = writeln!(
                out,
                "  {name:<12} {b}\n  {:<12} -> {}",
                "",
                values.join(" | ")
            );
        }
    }
    let _ = writeln!(out, "first {SHOWN_CYCLES} cycles:");
    for c in 0..SHOWN_CYCLES {
        let cycle = p.cycles.start() + c;
        let op = plan.op_for_cycle(cycle);
        let _ = writeln!(
            out,
            "  {cycle:<8} {:<12} {}",
            op.name,
            // JSON's own escapes, so the line stays JSON once `Stdout` has
            // escaped the rest for the terminal (review p18, L-3).
            super::shown::json(&masked_op(op.render_json(cycle, &shown), &secrets).to_string())
        );
    }
    for sc in activity.scenarios() {
        let _ = writeln!(out, "scenario `{}`: {} step(s)", sc.name, sc.steps.len());
        for (i, (step, name)) in sc.steps.iter().zip(&sc.step_names).enumerate() {
            let label = if name.parse::<usize>().is_ok() {
                String::new()
            } else {
                format!("{name}: ")
            };
            let _ = writeln!(out, "  {}. {label}{}", i + 1, describe(step));
        }
    }
    out
}

/// Whether a param, binding or op field named `name` holds a secret, as
/// [`paceline::mask_secrets`] judges a `name=value` argument (`password`,
/// `token`, `secret`, ...).
fn is_secret_name(name: &str) -> bool {
    paceline::mask_secrets(&[format!("{name}=x")])
        .first()
        .is_some_and(|m| m.ends_with("=***"))
}

/// Whether the binding `name` (a block's or an op's own under a scoped name,
/// `block/op/name`) is named for a secret.
fn is_secret_binding(name: &str) -> bool {
    is_secret_name(name.rsplit('/').next().unwrap_or(name))
}

/// `bindings` with every binding named for a secret giving `***`, under the
/// same index, so that templates compiled against `bindings` write `***`
/// where they put it.
fn masked_bindings(bindings: &paceline::BindingSet) -> paceline::BindingSet {
    let secret: Vec<&str> = bindings.names().filter(|n| is_secret_binding(n)).collect();
    secret.iter().fold(bindings.clone(), |set, name| {
        set.with_expression(name, "FixedValue('***')")
            .unwrap_or_else(|e| unreachable!("a constant binding compiles: {e}"))
    })
}

/// Learned values shorter than this are hidden only where they were put (a
/// URL's password, a field named for a secret), never searched for elsewhere:
/// `0` or `ab` would take a host's digits or a word's letters with them.
const SHORTEST_SEARCHED: usize = 4;

/// The secret values the plan must not show wherever they appear, each
/// hidden where it stands as a whole word (not inside a longer run of letters
/// and digits): those of the params named for a secret (from the file, or the
/// command line, where a template variable takes one into the ops and out of
/// the params), and those the ops' masking hides ([`Secrets::learn`]).
#[derive(Clone)]
struct Secrets(Vec<String>);

impl Secrets {
    fn of(
        driver_params: &std::collections::BTreeMap<String, serde_json::Value>,
        command_line: &[(String, String)],
    ) -> Self {
        let values: Vec<String> = driver_params
            .iter()
            .filter(|(k, _)| is_secret_name(k))
            .map(|(_, v)| match v {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            })
            .chain(
                command_line
                    .iter()
                    .filter(|(k, _)| is_secret_name(k))
                    .map(|(_, v)| v.clone()),
            )
            .collect();
        let mut s = Self(Vec::new());
        s.add(values, 1);
        s
    }

    /// Adds `values` at least `shortest` bytes long.
    fn add(&mut self, values: impl IntoIterator<Item = String>, shortest: usize) {
        self.0
            .extend(values.into_iter().filter(|v| v.len() >= shortest));
        // The longest first, so a secret that holds another is hidden whole.
        self.0.sort_by_key(|v| std::cmp::Reverse(v.len()));
        self.0.dedup();
    }

    /// Adds what [`masked_op`] hides in `rendered`: the value of a field
    /// named for a secret, and what [`paceline::mask_secrets`] hides in a
    /// string (a URL's password, a secret query option's value).
    fn learn(&mut self, rendered: &serde_json::Value) {
        use serde_json::Value;
        match rendered {
            Value::Object(fields) => {
                for (k, v) in fields {
                    if is_secret_name(k) {
                        let mut leaves = Vec::new();
                        scalars(v, &mut leaves);
                        self.add(leaves, SHORTEST_SEARCHED);
                    } else {
                        self.learn(v);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.learn(v)),
            Value::String(raw) => {
                let masked = paceline::mask_secrets(std::slice::from_ref(raw)).remove(0);
                self.add(hidden_spans(raw, &masked), SHORTEST_SEARCHED);
            }
            _ => {}
        }
    }

    /// `text` with every secret value that stands as a whole word written
    /// `***`.
    fn hide(&self, text: &str) -> String {
        self.0
            .iter()
            .filter(|s| s.as_str() != "***")
            .fold(text.to_string(), |t, secret| replace_words(&t, secret))
    }
}

/// The scalar values under `v` as text (a string without its quotes).
fn scalars(v: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => m.values().for_each(|v| scalars(v, out)),
        Value::Array(a) => a.iter().for_each(|v| scalars(v, out)),
        Value::String(s) => out.push(s.clone()),
        Value::Null => {}
        v => out.push(v.to_string()),
    }
}

/// `text` with each occurrence of `word` written `***` where no letter, digit
/// or `_` continues it on either side (`0` in `10.0.1.2` stays; in `key = 0`
/// it goes).
fn replace_words(text: &str, word: &str) -> String {
    let inner = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut from) = (0, 0);
    while let Some(j) = text[from..].find(word) {
        let at = from + j;
        let end = at + word.len();
        let open = !word.starts_with(inner) || !text[..at].chars().next_back().is_some_and(inner);
        let close = !word.ends_with(inner) || !text[end..].chars().next().is_some_and(inner);
        if open && close {
            out.push_str(&text[copied..at]);
            out.push_str("***");
            copied = end;
            from = end;
        } else {
            from = at + word.chars().next().map_or(1, char::len_utf8);
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The spans of `raw` that `masked` (`raw` with some spans written `***`)
/// hides, in order; none where the two do not line up.
fn hidden_spans(raw: &str, masked: &str) -> Vec<String> {
    let pieces: Vec<&str> = masked.split("***").collect();
    let mut out = Vec::new();
    if raw == masked || !raw.starts_with(pieces[0]) {
        return out;
    }
    let mut at = pieces[0].len();
    for (i, piece) in pieces.iter().enumerate().skip(1) {
        let end = if i + 1 == pieces.len() {
            raw.len()
                .checked_sub(piece.len())
                .filter(|&e| e >= at && raw.ends_with(piece))
        } else {
            raw.get(at..).and_then(|r| r.find(piece)).map(|j| at + j)
        };
        let Some(end) = end else {
            break;
        };
        out.push(raw[at..end].to_string());
        at = end + piece.len();
    }
    out
}

/// A rendered op with its secrets written `***`: a field named for a secret
/// keeps only its name, a string has the `secrets`' values hidden (before its
/// JSON escapes, which would hide them from a search), and is masked as the
/// recorded command line masks an argument ([`paceline::mask_secrets`]: a
/// URL's password, a `name=value` option named for a secret).
fn masked_op(op: serde_json::Value, secrets: &Secrets) -> serde_json::Value {
    use serde_json::Value;
    match op {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| {
                    let v = if is_secret_name(&k) {
                        Value::String("***".into())
                    } else {
                        masked_op(v, secrets)
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| masked_op(v, secrets)).collect())
        }
        Value::String(s) => Value::String(paceline::mask_secrets(&[secrets.hide(&s)]).remove(0)),
        v => v,
    }
}

fn describe(step: &Step) -> String {
    match step {
        Step::Run(o) => format!("run {}", overrides(o)),
        Step::Start(o) => format!("start {}", overrides(o)),
        Step::Wait(d) => format!("wait {d:?}"),
        Step::Await { alias } => format!("await `{alias}`"),
        Step::Rate { alias, spec } => format!("rate of `{alias}` to {spec}{}", per_thread(spec)),
        Step::Ramp { alias, to, over } => {
            format!("ramp `{alias}` to {to}{} over {over:?}", per_thread(to))
        }
        Step::Threads { alias, count } => format!("threads of `{alias}` to {count}"),
        Step::Concurrency { alias, count } => format!("concurrency of `{alias}` to {count}"),
        Step::Stop { alias } => format!("stop `{alias}`"),
        Step::Skipped { command, note, .. } => format!("{command} (skipped: {note})"),
    }
}

/// What a scenario step's thread-scope spec adds: its rate is each thread's.
fn per_thread(spec: &paceline::RateSpec) -> &'static str {
    match spec.scope_value() {
        paceline::Scope::Thread => " (per thread)",
        paceline::Scope::Activity => "",
    }
}

fn overrides(o: &ParamOverrides) -> String {
    let mut parts = Vec::new();
    let eq = |k: &str| match o.locked.get(k) {
        Some(true) => "===",
        Some(false) => "==",
        None => "=",
    };
    if let Some(d) = &o.driver {
        parts.push(format!("driver{}{d}", eq("driver")));
    }
    if let Some(t) = &o.tags {
        parts.push(format!("tags{}{t}", eq("tags")));
    }
    if let Some(a) = &o.alias {
        parts.push(format!("alias={a}"));
    }
    if let Some(t) = o.threads {
        parts.push(format!("threads{}{t}", eq("threads")));
    }
    if let Some(c) = o.cycles {
        parts.push(format!("cycles{}{c}", eq("cycles")));
    }
    if let Some(r) = o.rate {
        parts.push(format!("rate={r}"));
    }
    if let Some(s) = o.stride {
        parts.push(format!("stride={s}"));
    }
    #[cfg(feature = "redis")]
    if let Some(c) = &o.coordinate {
        parts.push(format!("coordinate{}{c}", eq("coordinate")));
    }
    for (k, v) in &o.driver_params {
        parts.push(shown_param(k, v));
    }
    if parts.is_empty() {
        "(file params)".to_string()
    } else {
        parts.join(" ")
    }
}

/// A step's `k=v` as the plan shows it, with its secrets written `***` as the
/// recorded command line writes them ([`paceline::mask_secrets`]): a param
/// named for a secret (`password`, `token`, ...) keeps only its name, a URL's
/// password is hidden; a string value keeps its quotes.
fn shown_param(k: &str, v: &serde_json::Value) -> String {
    let arg = match v {
        serde_json::Value::String(s) => format!("{k}={s}"),
        v => format!("{k}={v}"),
    };
    let masked = paceline::mask_secrets(&[arg]).remove(0);
    let value = masked.strip_prefix(k).and_then(|r| r.strip_prefix('='));
    match (v, value) {
        (_, Some("***")) => format!("{k}=***"),
        (serde_json::Value::String(_), Some(s)) => {
            format!("{k}={}", serde_json::Value::String(s.to_string()))
        }
        _ => masked,
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
