//! The checker: what a file is, the root re-exports, and each import of a file
//! against the rules.

use super::*;

/// What a source file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unit {
    /// `src/lib.rs`: the table of contents; may name any library module but the CLI.
    LibRoot,
    /// `src/main.rs`, `src/cli/**`: the binary; anything of `paceline::` goes.
    Binary,
    /// A library module at this path (`["pace", "schedule"]`).
    Module(Vec<String>),
}

pub(crate) fn unit(path: &str) -> Unit {
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
pub(crate) fn reexports(lib_rs: &str) -> HashMap<String, String> {
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
pub(crate) fn check(files: &[(String, String)]) -> Vec<Violation> {
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

pub(crate) fn check_file(
    path: &str,
    src: &str,
    roots: &HashMap<String, String>,
    out: &mut Vec<Violation>,
) {
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
                         LAYERS in tests/layering/main.rs",
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
pub(crate) fn root_targets(toks: &[(Tok, usize)], j: usize) -> Vec<(Option<String>, usize)> {
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

pub(crate) fn check_target(
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
