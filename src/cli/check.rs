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
    out.write(&plan(&activity, &overrides));
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

/// The plan as text.
pub fn plan(activity: &paceline::Activity, overrides: &ParamOverrides) -> String {
    let plan = OpPlan::new(activity, overrides);
    let p = plan.params();
    let mut out = String::new();
    let _ = writeln!(out, "{}: valid", activity.source());
    if let Some(d) = super::bundled::one_line(activity) {
        let _ = writeln!(out, "  {d}");
    }
    let rate = p.rate.map_or("unpaced".to_string(), |r| r.to_string());
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
    if !plan.bindings().is_empty() {
        let _ = writeln!(out, "bindings, first {SHOWN_CYCLES} cycles:");
        for name in plan.bindings().names() {
            let b = plan
                .bindings()
                .get(name)
                .map(|b| b.expression().to_string())
                .unwrap_or_default();
            let values: Vec<String> = (0..SHOWN_CYCLES)
                .map(|c| {
                    let cycle = p.cycles.start() + c;
                    plan.bindings()
                        .index_of(name)
                        .map(|i| plan.bindings().eval(i, cycle).to_string())
                        .unwrap_or_default()
                })
                .collect();
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
            op.render_json(cycle, plan.bindings())
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

fn describe(step: &Step) -> String {
    match step {
        Step::Run(o) => format!("run {}", overrides(o)),
        Step::Start(o) => format!("start {}", overrides(o)),
        Step::Wait(d) => format!("wait {d:?}"),
        Step::Await { alias } => format!("await `{alias}`"),
        Step::Rate { alias, spec } => format!("rate of `{alias}` to {spec}"),
        Step::Ramp { alias, to, over } => format!("ramp `{alias}` to {to} over {over:?}"),
        Step::Threads { alias, count } => format!("threads of `{alias}` to {count}"),
        Step::Concurrency { alias, count } => format!("concurrency of `{alias}` to {count}"),
        Step::Stop { alias } => format!("stop `{alias}`"),
        Step::Skipped { command, note, .. } => format!("{command} (skipped: {note})"),
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
