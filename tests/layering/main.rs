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
//! is a small tokenizer, not a Rust parser; its own tests feed it samples that must and
//! must not fail.
//!
//! One test binary: this file holds the rules and the test on the source; `tokens` the
//! tokenizer, `checker` the checks of one file, `self_tests` the checker on samples.

mod checker;
mod self_tests;
mod tokens;

use checker::check;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use tokens::{Tok, ident, punct, tokenize};

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
