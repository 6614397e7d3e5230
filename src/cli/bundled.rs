//! The activities that ship inside the binary, so `paceline run quickstart` and
//! `paceline list` work from any directory.

/// (name, file text) of each bundled activity.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "quickstart",
        include_str!("../../activities/quickstart.yaml"),
    ),
    ("ramp", include_str!("../../activities/ramp.yaml")),
    ("overload", include_str!("../../activities/overload.yaml")),
    ("kv-stdout", include_str!("../../activities/kv-stdout.yaml")),
    (
        "postgres-keyvalue",
        include_str!("../../activities/postgres-keyvalue.yaml"),
    ),
    (
        "redis-keyvalue",
        include_str!("../../activities/redis-keyvalue.yaml"),
    ),
    (
        "http-checks",
        include_str!("../../activities/http-checks.yaml"),
    ),
];

/// The bundled activity called `name` (with or without `.yaml`).
pub fn find(name: &str) -> Option<(&'static str, &'static str)> {
    let name = name.strip_suffix(".yaml").unwrap_or(name);
    BUNDLED.iter().copied().find(|(n, _)| *n == name)
}

/// The bundled activity's name closest to `word`, if one is close enough to be
/// a likely typo (`quikstart`).
pub fn closest(word: &str) -> Option<&'static str> {
    let word = word.strip_suffix(".yaml").unwrap_or(word);
    paceline::closest_name(word, BUNDLED.iter().map(|(n, _)| *n))
}

/// What to say when `word` is neither a file nor a bundled activity (nor
/// close to one): what was looked for, where, and what exists.
pub fn no_such(word: &str) -> String {
    let names: Vec<&str> = BUNDLED.iter().map(|(n, _)| *n).collect();
    let here = std::env::current_dir()
        .map(|d| format!(" in {}", d.display()))
        .unwrap_or_default();
    format!(
        "no file or bundled activity `{word}`: there is no such file{here}, and the bundled \
         activities are {}; give a path to a YAML file, a bundled name (`paceline list` \
         describes them), or the activity as params alone (`paceline run driver=diag \
         cycles=100 rate=10`)",
        names.join(", ")
    )
}

/// A bundled file's description on one line, if it has one (read through the
/// library's loader: only the activity layer knows YAML).
pub fn description(name: &str, text: &str) -> Option<String> {
    let activity = paceline::Drivers::builtin()
        .loader()
        .from_str(text, &format!("{name}.yaml"))
        .ok()?;
    one_line(&activity)
}

/// An activity's description with its line breaks and runs of spaces folded.
pub fn one_line(activity: &paceline::Activity) -> Option<String> {
    let d = activity.description()?;
    Some(d.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_activity_validates_and_has_a_description() {
        let loader = paceline::Drivers::builtin().loader();
        for (name, text) in BUNDLED {
            let a = loader.from_str(text, &format!("{name}.yaml"));
            assert!(a.is_ok(), "{name}: {}", a.unwrap_err());
            assert!(
                description(name, text).is_some(),
                "{name} has no description"
            );
        }
        assert_eq!(find("ramp.yaml").unwrap().0, "ramp");
        assert!(find("nope").is_none());
        // Regression (issue 17): `run quikstart` had no did-you-mean.
        assert_eq!(closest("quikstart"), Some("quickstart"));
        assert_eq!(closest("overlaod.yaml"), Some("overload"));
        assert_eq!(closest("elsewhere"), None);
    }

    /// Issue 24 item 16: docs/activities.md named `activities/http-checks.yaml`,
    /// which `paceline run http-checks` could not find. Every `activities/X.yaml`
    /// the README and docs name is bundled.
    #[test]
    fn every_activity_file_the_docs_name_is_bundled() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut docs = vec![root.join("README.md")];
        if let Ok(dir) = std::fs::read_dir(root.join("docs")) {
            docs.extend(dir.filter_map(|e| e.ok().map(|e| e.path())));
        }
        let mut named = 0;
        for doc in docs
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
        {
            let text = std::fs::read_to_string(doc).unwrap_or_default();
            for (at, _) in text.match_indices("activities/") {
                let rest = &text[at + "activities/".len()..];
                let Some(end) = rest.find(".yaml") else {
                    continue;
                };
                let name = &rest[..end];
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    continue;
                }
                named += 1;
                assert!(
                    find(name).is_some(),
                    "{} names activities/{name}.yaml, which is not bundled",
                    doc.display()
                );
            }
        }
        assert!(named > 0);
        let far = no_such("nosuchthingatall");
        assert!(
            far.contains("`nosuchthingatall`") && far.contains("quickstart"),
            "{far}"
        );
        assert!(!far.contains("os error"), "{far}");
    }
}
