//! The house rules of `STYLE.md` ("The house"), checked on the source: dependencies flow
//! one way, from the leaves up.
//!
//! ```text
//! 0  error, nanos, sync,     leaves
//!    wildcard
//! 1  clock
//! 2  pace
//! 3  limiters
//! 4  metrics
//! 5  engine                  owns the slot and cycle seams; knows no YAML, no Redis
//! 6  store                   what lives in Redis (feature `redis`): the shared schedule,
//!                            implementing the engine's seams, and the keyed limiter
//! 7  activity                the only code that knows YAML
//! 8  cli                     the binary (src/main.rs, src/cli/): may use anything of paceline::
//! ```
//!
//! A library module may import (`use crate::x`, a `crate::x::` path anywhere in code, or
//! a `super::` path that climbs out of its top-level module) only from its own layer or
//! below. Root re-exports (`crate::RateLimiter`) count as the module they come from.
//! Also: no YAML crate outside `src/activity/`, nothing in the library names the CLI,
//! and atomics come only through `src/sync.rs` (so `--cfg loom` sees them all).
//!
//! Comments and string literals are skipped: a doc link is not a dependency. The checker
//! is a small tokenizer, not a Rust parser; its own tests at the bottom feed it samples
//! that must and must not fail.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// The layer table, lowest first.
const LAYERS: &[(&str, u8)] = &[
    ("error", 0),
    ("nanos", 0),
    ("sync", 0),
    ("wildcard", 0),
    ("clock", 1),
    ("pace", 2),
    ("limiters", 3),
    ("metrics", 4),
    ("engine", 5),
    ("store", 6),
    ("activity", 7),
    ("cli", 8),
];

/// The crates that parse YAML (`serde_yaml` is the dependency's name in Cargo.toml,
/// `yaml_serde` the package behind it).
const YAML_CRATES: &[&str] = &["serde_yaml", "yaml_serde"];

/// The Redis client crate: only `store` and the layers above it (`activity`'s
/// drivers, `cli`) may name it; the engine meets a shared schedule only through
/// its own seams.
const REDIS_CRATE: &str = "redis";

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|&(_, l)| l)
}

/// One broken rule, at a place in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.what)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Punct(&'static str),
}

/// Tokens of Rust source with their line numbers; comments, string, byte-string, raw
/// string and char literals are dropped (lifetimes are not char literals).
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                line += usize::from(c[i] == '\n');
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (ch == 'r' || (ch == 'b' && at(i + 1) == 'r'))
            && matches!(at(i + 1 + usize::from(ch == 'b')), '"' | '#')
            && {
                // r"..." or r#"..."#, not an identifier such as `r#type`
                let mut j = i + 1 + usize::from(ch == 'b');
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            }
        {
            let mut j = i + 1 + usize::from(ch == 'b');
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#') {
                    j += 1 + hashes;
                    break;
                }
                line += usize::from(c[j] == '\n');
                j += 1;
            }
            i = j;
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                // escaped char literal: skip to the closing quote
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3; // 'x'
            } else {
                i += 1; // a lifetime's quote
            }
        } else if ch == 'b' && at(i + 1) == '\'' {
            i += 1; // b'x': the quote is handled next round
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::Punct("::"), line));
            i += 2;
        } else {
            let p = match ch {
                '{' => "{",
                '}' => "}",
                ',' => ",",
                ';' => ";",
                '*' => "*",
                '!' => "!",
                _ => "other",
            };
            out.push((Tok::Punct(p), line));
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

fn punct(t: Option<&(Tok, usize)>, p: &str) -> bool {
    matches!(t, Some((Tok::Punct(q), _)) if *q == p)
}

/// What a source file is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unit {
    /// `src/lib.rs`: the table of contents; may name any library module but the CLI.
    LibRoot,
    /// `src/main.rs`, `src/cli/**`: the binary; anything of `paceline::` goes.
    Binary,
    /// A library module at this path (`["pace", "schedule"]`).
    Module(Vec<String>),
}

fn unit(path: &str) -> Unit {
    let rel = path.strip_prefix("src/").unwrap_or(path);
    if rel == "lib.rs" {
        return Unit::LibRoot;
    }
    if rel == "main.rs" || rel.starts_with("cli/") || rel == "cli.rs" || rel.starts_with("bin/") {
        return Unit::Binary;
    }
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    Unit::Module(parts)
}

/// Root re-exports of `src/lib.rs`: `pub use pace::{RateLimiter, ...}` maps
/// `RateLimiter` to `pace`.
fn reexports(lib_rs: &str) -> HashMap<String, String> {
    let toks = tokenize(lib_rs);
    let mut map = HashMap::new();
    let mut i = 0;
    while i + 3 < toks.len() {
        if ident(toks.get(i)) == Some("pub") && ident(toks.get(i + 1)) == Some("use") {
            if let (Some(module), true) = (ident(toks.get(i + 2)), punct(toks.get(i + 3), "::")) {
                let module = module.to_string();
                // every identifier that ends an item (before `,`, `}` or `;`) is a name
                let mut j = i + 4;
                while j < toks.len() && !punct(toks.get(j), ";") {
                    if let Some(name) = ident(toks.get(j)) {
                        if punct(toks.get(j + 1), ",")
                            || punct(toks.get(j + 1), "}")
                            || punct(toks.get(j + 1), ";")
                        {
                            map.insert(name.to_string(), module.clone());
                        }
                    }
                    j += 1;
                }
                i = j;
            }
        }
        i += 1;
    }
    map
}

/// Checks every file against the house rules; `files` are (path from the crate root,
/// contents).
fn check(files: &[(String, String)]) -> Vec<Violation> {
    let lib_rs = files
        .iter()
        .find(|(p, _)| p == "src/lib.rs")
        .map_or("", |(_, s)| s.as_str());
    let roots = reexports(lib_rs);
    let mut out = Vec::new();
    for (path, src) in files {
        check_file(path, src, &roots, &mut out);
    }
    out
}

fn check_file(path: &str, src: &str, roots: &HashMap<String, String>, out: &mut Vec<Violation>) {
    let unit = unit(path);
    let toks = tokenize(src);
    let mut report = |line: usize, what: String| {
        out.push(Violation {
            file: path.to_string(),
            line,
            what,
        })
    };
    let (from, from_layer) = match &unit {
        Unit::Binary => return,
        Unit::LibRoot => ("the crate root".to_string(), None),
        Unit::Module(p) => match layer(&p[0]) {
            Some(l) => (p[0].clone(), Some(l)),
            None => {
                report(
                    1,
                    format!(
                        "module `{}` is not in the layer table: add it to STYLE.md and \
                         tests/layering.rs",
                        p[0]
                    ),
                );
                return;
            }
        },
    };
    // The module path at each point: the file's own, plus inline `mod x { ... }` blocks.
    let base: Vec<String> = match &unit {
        Unit::Module(p) => p.clone(),
        _ => Vec::new(),
    };
    let mut inline: Vec<(String, usize)> = Vec::new(); // (name, brace depth inside it)
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        let line = *line;
        match tok {
            Tok::Punct("{") => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            Tok::Punct("}") => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Punct(";") => pending_mod = None,
            Tok::Ident(word) => {
                let after_colons = i > 0 && punct(toks.get(i - 1), "::");
                match word.as_str() {
                    "mod" => {
                        if let Some(name) = ident(toks.get(i + 1)) {
                            if unit == Unit::LibRoot && name == "cli" {
                                report(
                                    line,
                                    "`mod cli` in the library: the CLI belongs to the binary \
                                     (src/main.rs)"
                                        .to_string(),
                                );
                            }
                            pending_mod = Some(name.to_string());
                        }
                    }
                    w if YAML_CRATES.contains(&w) && !after_colons && from != "activity" => {
                        report(
                            line,
                            format!(
                                "`{w}` in `{from}`: only `activity` knows YAML \
                                 (STYLE.md, the house)"
                            ),
                        );
                    }
                    w if w == REDIS_CRATE
                        && !after_colons
                        && punct(toks.get(i + 1), "::")
                        && layer(&from).is_some_and(|l| l < 6) =>
                    {
                        report(
                            line,
                            format!(
                                "`redis` in `{from}`: only `store` and above know Redis \
                                 (STYLE.md, the house)"
                            ),
                        );
                    }
                    "atomic" if after_colons && path != "src/sync.rs" => {
                        let std_sync = i >= 4
                            && punct(toks.get(i - 1), "::")
                            && ident(toks.get(i - 2)) == Some("sync")
                            && matches!(ident(toks.get(i - 4)), Some("std" | "core"));
                        if std_sync {
                            report(
                                line,
                                "`std::sync::atomic` outside src/sync.rs: take atomics from \
                                 `crate::sync` so that loom models see them"
                                    .to_string(),
                            );
                        }
                    }
                    "portable_atomic" if !after_colons && path != "src/sync.rs" => {
                        report(
                            line,
                            "`portable_atomic` outside src/sync.rs: take atomics from \
                             `crate::sync` so that loom models see them"
                                .to_string(),
                        );
                    }
                    "crate" | "super" if !after_colons && punct(toks.get(i + 1), "::") => {
                        // Resolve where the path starts: the crate root, or the module
                        // `super` climbs to.
                        let mut at: Vec<String> = base.clone();
                        at.extend(inline.iter().map(|(n, _)| n.clone()));
                        let mut j = i;
                        if word == "crate" {
                            at.clear();
                            j += 2;
                        } else {
                            while ident(toks.get(j)) == Some("super")
                                && punct(toks.get(j + 1), "::")
                            {
                                at.pop();
                                j += 2;
                            }
                        }
                        let spelled = |end: usize| -> String {
                            toks[i..end.min(toks.len())]
                                .iter()
                                .map(|(t, _)| match t {
                                    Tok::Ident(s) => s.as_str(),
                                    Tok::Punct(p) => p,
                                })
                                .collect()
                        };
                        if let Some(top) = at.first() {
                            check_target(
                                top,
                                &from,
                                from_layer,
                                line,
                                &spelled(j),
                                "",
                                &mut report,
                            );
                        } else if unit != Unit::LibRoot {
                            // at the crate root: the next name (or each name of a group)
                            let targets = root_targets(&toks, j);
                            let text = spelled(j);
                            for (name, tline) in targets {
                                match name.as_deref() {
                                    None => report(
                                        tline,
                                        format!(
                                            "glob import of the crate root (`{text}*`): it \
                                             pulls in every layer; name what is used"
                                        ),
                                    ),
                                    Some(name) => {
                                        if layer(name).is_some() {
                                            check_target(
                                                name,
                                                &from,
                                                from_layer,
                                                tline,
                                                &format!("{}{name}", spelled(j)),
                                                "",
                                                &mut report,
                                            );
                                        } else if let Some(module) = roots.get(name) {
                                            check_target(
                                                module,
                                                &from,
                                                from_layer,
                                                tline,
                                                &format!("{}{name}", spelled(j)),
                                                &format!(" (re-exported from `{module}`)"),
                                                &mut report,
                                            );
                                        } else {
                                            report(
                                                tline,
                                                format!(
                                                    "`{}{name}`: not a module of the layer \
                                                     table nor a root re-export",
                                                    spelled(j)
                                                ),
                                            );
                                        }
                                    }
                                }
                            }
                        }
                        i = j;
                        continue;
                    }
                    "cli" if unit == Unit::LibRoot && punct(toks.get(i + 1), "::") => {
                        report(
                            line,
                            "the library root names `cli`: the CLI belongs to the binary"
                                .to_string(),
                        );
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// The names a path at the crate root reaches, starting at token `j` (just past
/// `crate::`): one name, a `{...}` group's first-level names, or `None` for a glob.
/// Macros (`crate::name!`) and `self` are not modules and are skipped.
fn root_targets(toks: &[(Tok, usize)], j: usize) -> Vec<(Option<String>, usize)> {
    let line_of = |k: usize| toks.get(k).map_or(0, |(_, l)| *l);
    if punct(toks.get(j), "*") {
        return vec![(None, line_of(j))];
    }
    if let Some(name) = ident(toks.get(j)) {
        if punct(toks.get(j + 1), "!") {
            return Vec::new();
        }
        return vec![(Some(name.to_string()), line_of(j))];
    }
    let mut out = Vec::new();
    if punct(toks.get(j), "{") {
        let (mut k, mut depth, mut item_start) = (j + 1, 1, true);
        while k < toks.len() && depth > 0 {
            match &toks[k].0 {
                Tok::Punct("{") => depth += 1,
                Tok::Punct("}") => depth -= 1,
                Tok::Punct(",") if depth == 1 => {
                    item_start = true;
                    k += 1;
                    continue;
                }
                Tok::Punct("*") if depth == 1 && item_start => out.push((None, line_of(k))),
                Tok::Ident(name) if depth == 1 && item_start && name != "self" => {
                    out.push((Some(name.clone()), line_of(k)));
                }
                _ => {}
            }
            item_start = false;
            k += 1;
        }
    }
    out
}

fn check_target(
    target: &str,
    from: &str,
    from_layer: Option<u8>,
    line: usize,
    text: &str,
    note: &str,
    report: &mut impl FnMut(usize, String),
) {
    let Some(from_layer) = from_layer else {
        return;
    };
    match layer(target) {
        Some(to) if to > from_layer => report(
            line,
            format!(
                "upward import `{text}`{note}: `{from}` (layer {from_layer}) may not \
                 import `{target}` (layer {to})"
            ),
        ),
        Some(_) => {}
        None => report(
            line,
            format!("`{text}`: module `{target}` is not in the layer table"),
        ),
    }
}

/// Every `.rs` file under `dir`, as (path relative to `root`, contents), sorted.
fn read_tree(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_tree(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            out.push((rel, text));
        }
    }
}

#[test]
fn the_source_has_no_upward_imports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    read_tree(root, &root.join("src"), &mut files);
    // the walk really saw the crate (a broken walk must not pass by seeing nothing)
    for must in ["src/lib.rs", "src/pace/schedule.rs", "src/clock/mod.rs"] {
        assert!(
            files.iter().any(|(p, _)| p == must),
            "{must} not found under {}",
            root.display()
        );
    }
    let violations = check(&files);
    assert!(
        violations.is_empty(),
        "{} layering violation(s) (STYLE.md, \"The house\"):\n{}",
        violations.len(),
        violations
            .iter()
            .map(|v| format!("  {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The checker on samples: each bad line is found (file and line), and nothing else.
#[test]
fn the_checker_finds_each_kind_of_violation_and_nothing_more() {
    let lib = r#"
mod clock;
mod pace;
mod metrics;
mod activity;
pub use pace::{RateLimiter, RateSpec};
pub use activity::{Activity, Op as Operation};
pub use metrics::Recorder;
"#;
    let files: Vec<(String, String)> = [
        ("src/lib.rs", lib),
        (
            "src/pace/limiter.rs",
            r#"use crate::clock::Clock;
use crate::sync::{self, AtomicU64};
use crate::metrics::Recorder;
use super::spec::RateSpec;
// use crate::activity::Op; is a comment
/// [`Op`](crate::activity::Op) is a doc link
const S: &str = "crate::engine::Motor";
fn f() -> crate::nanos::Nanos { crate::engine::now() }
"#,
        ),
        (
            "src/clock/mod.rs",
            r#"use crate::{
    nanos::Nanos,
    pace::Grant,
};
use std::sync::atomic::AtomicU64;
#[cfg(test)]
mod tests {
    use super::*;
    use super::super::limiters::Limit;
}
"#,
        ),
        (
            "src/limiters/keyed.rs",
            "use crate::RateLimiter;\nuse crate::Operation;\nuse crate::Mystery;\nfn g() { crate::debug_assert_sorted!(); }\n",
        ),
        (
            "src/engine/runtime.rs",
            "use crate::activity::Op;\nuse crate::pace::RateLimiter;\nfn y(s: &str) { let _ = serde_yaml::from_str::<u8>(s); }\nuse crate::store::coord::Coordination;\nfn z() -> redis::Value { todo!() }\n",
        ),
        (
            "src/activity/load.rs",
            "use crate::engine::Engine;\nuse serde_yaml::Value;\nuse crate::cli::Args;\n",
        ),
        ("src/nanos.rs", "#[cfg(test)]\nmod tests {\n    use super::*;\n}\nuse crate::*;\n"),
        ("src/main.rs", "mod cli;\nuse paceline::Activity;\nfn main() {}\n"),
        ("src/cli/args.rs", "use crate::cli::report;\nuse serde_yaml::Value;\n"),
        ("src/widgets.rs", "pub fn w() {}\n"),
        (
            "src/metrics/hub.rs",
            "use portable_atomic::AtomicU128;\nlet c = 'c'; let l: &'static str = \"x\";\nuse crate::activity::Op;\n",
        ),
    ]
    .into_iter()
    .map(|(p, s)| (p.to_string(), s.to_string()))
    .collect();
    let mut with_cli_root = files.clone();
    with_cli_root[0]
        .1
        .push_str("mod cli;\npub use cli::Args;\n");

    let found: Vec<String> = check(&files).iter().map(|v| v.to_string()).collect();
    let expect = [
        ("src/pace/limiter.rs:3", "upward import `crate::metrics`"),
        ("src/pace/limiter.rs:8", "upward import `crate::engine`"),
        ("src/clock/mod.rs:3", "upward import `crate::pace`"),
        (
            "src/clock/mod.rs:5",
            "`std::sync::atomic` outside src/sync.rs",
        ),
        (
            "src/clock/mod.rs:9",
            "upward import `super::super::limiters`",
        ),
        (
            "src/limiters/keyed.rs:2",
            "`crate::Operation` (re-exported from `activity`)",
        ),
        ("src/limiters/keyed.rs:3", "`crate::Mystery`: not a module"),
        ("src/engine/runtime.rs:1", "upward import `crate::activity`"),
        ("src/engine/runtime.rs:3", "`serde_yaml` in `engine`"),
        ("src/engine/runtime.rs:4", "upward import `crate::store`"),
        ("src/engine/runtime.rs:5", "`redis` in `engine`"),
        ("src/activity/load.rs:3", "upward import `crate::cli`"),
        ("src/nanos.rs:5", "glob import of the crate root"),
        (
            "src/widgets.rs:1",
            "module `widgets` is not in the layer table",
        ),
        (
            "src/metrics/hub.rs:1",
            "`portable_atomic` outside src/sync.rs",
        ),
        ("src/metrics/hub.rs:3", "upward import `crate::activity`"),
    ];
    for (place, what) in expect {
        assert!(
            found
                .iter()
                .any(|f| f.starts_with(&format!("{place}: ")) && f.contains(what)),
            "expected {place}: …{what}… among:\n{}",
            found.join("\n")
        );
    }
    assert_eq!(
        found.len(),
        expect.len(),
        "unexpected findings:\n{}",
        found.join("\n")
    );

    let root_findings: Vec<String> = check(&with_cli_root)
        .iter()
        .filter(|v| v.file == "src/lib.rs")
        .map(|v| v.to_string())
        .collect();
    assert_eq!(root_findings.len(), 2, "{root_findings:?}");
    assert!(root_findings[0].starts_with("src/lib.rs:9: `mod cli` in the library"));
    assert!(root_findings[1].starts_with("src/lib.rs:10: the library root names `cli`"));
}

#[test]
fn the_tokenizer_skips_comments_strings_and_chars_but_not_lifetimes() {
    let src = "a /* b\n /* nested */ c */ d // e\n\"f\\\" g\" r#\"h \"i\"# j 'k' '\\n' l<'m> n";
    let idents: Vec<(String, usize)> = tokenize(src)
        .into_iter()
        .filter_map(|(t, line)| match t {
            Tok::Ident(s) => Some((s, line)),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = idents.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(names, ["a", "d", "j", "l", "m", "n"]);
    assert_eq!(
        idents[1].1, 2,
        "line numbers count newlines inside comments"
    );
}
