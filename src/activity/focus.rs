//! Per-step validation, as NoSQLBench resolves a step: only the ops a step's
//! tag filter selects, the bindings they use and the step itself must be
//! valid. Every problem found while validating a file carries a scope (the
//! file, a binding, an op, a scenario step); when the loader is focused on a
//! step (`SCENARIO.STEP` or a whole `SCENARIO`), the problems outside that
//! step's scopes are dropped. Unfocused, every problem counts (`paceline check`).

use super::model::{Scenario, Step};
use super::params::TagFilter;
use super::validate::{Raw, Validator};
use std::collections::BTreeMap;

impl super::Loader {
    /// The scenario steps of the file at `path`, each as `SCENARIO.STEP` (steps
    /// of a list by position, `1`, `2`, ...), in the file's order; template
    /// variables are expanded first.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("pl-steps-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let f = dir.join("w.yaml");
    /// std::fs::write(&f, "scenarios:\n  s: {a: run, b: run}\n  t: [run]\n  u: run cycles=1\n")?;
    /// let steps = paceline::Loader::new(&["d"]).step_names(&f)?;
    /// assert_eq!(steps, ["s.a", "s.b", "t.1", "u.1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step_names(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Vec<String>, super::ActivityError> {
        use serde_yaml::Value;
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| super::ActivityError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let text = super::template_vars::expand(&text, &self.vars).0;
        let doc: Value = serde_yaml::from_str(&text).unwrap_or(Value::Null);
        let mut out = Vec::new();
        if let Some(Value::Mapping(m)) = doc.get("scenarios") {
            for (k, v) in m {
                let Some(sc) = super::validate::key_text(k) else {
                    continue;
                };
                match v {
                    Value::Mapping(steps) => out.extend(
                        steps
                            .keys()
                            .filter_map(super::validate::key_text)
                            .map(|s| format!("{sc}.{s}")),
                    ),
                    Value::Sequence(items) => {
                        out.extend((1..=items.len()).map(|i| format!("{sc}.{i}")))
                    }
                    _ => out.push(format!("{sc}.1")),
                }
            }
        }
        Ok(out)
    }
}

/// What a problem belongs to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scope {
    /// A binding, by its name as ops write it (a block's or an op's own
    /// binding under its plain name).
    Binding(String),
    /// An op, by its full name (`BLOCK__OP`).
    Op(String),
    /// A scenario step, `SCENARIO.STEP`.
    Step(String),
    /// A block's own structure (an unknown key, no ops), by its name: it
    /// matters to the steps that select an op of the block.
    Block(String),
}

/// An op as the tag filters see it, valid or not, with the binding names its
/// text refers to.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpSeen {
    pub(crate) name: String,
    pub(crate) tags: BTreeMap<String, String>,
    pub(crate) refs: Vec<String>,
}

/// The scope bookkeeping a [`Validator`] keeps.
#[derive(Debug, Default)]
pub(crate) struct Scopes {
    /// Problem index to scope; a problem without one belongs to the file.
    pub(crate) of: BTreeMap<usize, Scope>,
    pub(crate) ops: Vec<OpSeen>,
    /// The scenario being validated (steps are scoped `SCENARIO.STEP`).
    pub(crate) scenario: String,
    /// Params of another driver that the running one does not read.
    pub(crate) ignored: Vec<String>,
    /// The driver the file's own `params:` name (before the command line's
    /// replaces it): a step's params are that driver's unless the step names
    /// another.
    pub(crate) own_driver: Option<String>,
    /// Notes on what NB5 reads and paceline passes over (a block nested in
    /// another), shown when the file runs.
    pub(crate) notes: Vec<String>,
}

impl Validator<'_> {
    /// Marks every problem from index `from` on that has no scope yet as `scope`'s.
    pub(crate) fn scope_from(&mut self, from: usize, scope: Scope) {
        for i in from..self.problems.len() {
            self.scopes.of.entry(i).or_insert_with(|| scope.clone());
        }
    }

    /// Records an op the filters may select, with the `{names}` its text uses.
    pub(crate) fn op_seen(
        &mut self,
        name: &str,
        tags: &BTreeMap<String, String>,
        value: &serde_yaml::Value,
    ) {
        let mut refs = Vec::new();
        names_in(value, &mut refs);
        self.scopes.ops.push(OpSeen {
            name: name.to_string(),
            tags: tags.clone(),
            refs,
        });
    }

    /// The problems that matter for the loader's focus: all of them when it
    /// has none (or names no scenario or step of `scenarios`), else those of
    /// the file, of the focused steps, of the ops their tag filters select and
    /// of the bindings those ops use. `default_tags` is the activity's own
    /// filter, for steps that set none.
    pub(crate) fn focused_problems(
        &mut self,
        scenarios: &[Scenario],
        default_tags: Option<&TagFilter>,
    ) -> Vec<Raw> {
        let all = std::mem::take(&mut self.problems);
        let Some(focus) = self.loader.focus.as_deref() else {
            return all;
        };
        let mut steps: Vec<(String, Option<&Step>)> = Vec::new();
        for sc in scenarios {
            for (i, name) in sc.step_names.iter().enumerate() {
                let full = format!("{}.{name}", sc.name);
                if sc.name == focus || full == focus {
                    steps.push((full, sc.steps.get(i)));
                }
            }
        }
        // A step that did not validate is not in `scenarios`; its name still
        // counts, from the problems' scopes.
        for s in self.scopes.of.values() {
            if let Scope::Step(full) = s
                && (full == focus || full.rsplit_once('.').is_some_and(|(sc, _)| sc == focus))
                && !steps.iter().any(|(n, _)| n == full)
            {
                steps.push((full.clone(), None));
            }
        }
        if steps.is_empty() {
            return all;
        }
        // The ops the focused steps select; a step that failed selects them all
        // (its own problem is reported anyway).
        let mut selected: Vec<&OpSeen> = Vec::new();
        for (_, step) in &steps {
            let filter = match step {
                Some(Step::Run(o) | Step::Start(o)) => o.tags.as_ref().or(default_tags),
                Some(_) => continue,
                None => None,
            };
            for op in &self.scopes.ops {
                if filter.is_none_or(|f| f.matches(&op.tags))
                    && !selected.iter().any(|s| s.name == op.name)
                {
                    selected.push(op);
                }
            }
        }
        let keep = |scope: Option<&Scope>| match scope {
            None => true,
            Some(Scope::Step(s)) => steps.iter().any(|(n, _)| n == s),
            Some(Scope::Op(o)) => selected.iter().any(|op| op.name == *o),
            Some(Scope::Binding(b)) => selected.iter().any(|op| op.refs.iter().any(|r| r == b)),
            Some(Scope::Block(b)) => selected
                .iter()
                .any(|op| op.tags.get("block").is_some_and(|n| n == b)),
        };
        all.into_iter()
            .enumerate()
            .filter(|(i, _)| keep(self.scopes.of.get(i)))
            .map(|(_, r)| r)
            .collect()
    }
}

/// The `{name}` placeholders in every string of `v` (keys included), and the
/// names a field map's values use.
fn names_in(v: &serde_yaml::Value, out: &mut Vec<String>) {
    use serde_yaml::Value;
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(i) = rest.find('{') {
                rest = &rest[i + 1..];
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
                    .unwrap_or(rest.len());
                if rest[end..].starts_with('}') && end > 0 {
                    let name = &rest[..end];
                    if !out.iter().any(|n| n == name) {
                        out.push(name.to_string());
                    }
                }
            }
        }
        Value::Sequence(items) => items.iter().for_each(|i| names_in(i, out)),
        Value::Mapping(m) => {
            for (k, item) in m {
                names_in(k, out);
                names_in(item, out);
            }
        }
        Value::Tagged(t) => names_in(&t.value, out),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_finds_placeholders_only() {
        let v: serde_yaml::Value =
            serde_yaml::from_str("{a: 'x {k} {{Mod(3)}} {\"j\": 1} {v-1}', b: ['{w}']}").unwrap();
        let mut out = Vec::new();
        names_in(&v, &mut out);
        assert_eq!(out, ["k", "v-1", "w"]);
    }
}
