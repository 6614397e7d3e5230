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
}
