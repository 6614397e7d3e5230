//! The checker on samples that must and must not fail.

use super::*;

/// The checker on samples: each bad line is found (file and line), and nothing else.
#[test]
pub(crate) fn the_checker_finds_each_kind_of_violation_and_nothing_more() {
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
pub(crate) const S: &str = "crate::engine::Motor";
pub(crate) fn f() -> crate::nanos::Nanos { crate::engine::now() }
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
pub(crate) fn the_tokenizer_skips_comments_strings_and_chars_but_not_lifetimes() {
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
