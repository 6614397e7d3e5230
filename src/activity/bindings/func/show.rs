//! NB5's `Show()` (virtdata `stateful/Show.java`): the thread's saved values
//! (`Save*`) as text, `{name=value, ...}` in `HashMap` order, or
//! `Show('a', 'b')` as `{a=value,b=value}` (`NULL` for a name not saved).
//!
//! paceline keeps no state between bindings: a `Show` here shows what its own
//! chain saved, which is the value passing through when no function has
//! changed it since the save (a save further back is refused at load). NB5's
//! map also holds what other bindings, and earlier cycles, saved in the
//! thread: a file whose other bindings save shows more under NB5.

use super::Func;
use super::java::{java_hash_order, java_string_hash};
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::parse::{Arg, Call};
use crate::activity::bindings::value::{Kind, Value, java_double};

/// How `Show` is called, for messages.
pub(crate) const USAGE: &str = "`Show()` or `Show('name', ...)` after `Save*('name')`";

/// Records a call of the chain: a `Save*` saves the value under its name
/// (live: still the value passing through); any other function (`Show`
/// too) changes the value, so the names saved before it are no longer live.
pub(crate) fn track(saved: &mut Vec<(String, bool)>, call: &Call) {
    if call.name.starts_with("Save") {
        if let Some(Arg::Str(name, _)) = call.args.first() {
            match saved.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = true,
                None => saved.push((name.clone(), true)),
            }
        }
    } else {
        saved.iter_mut().for_each(|(_, live)| *live = false);
    }
}

/// What a compiled `Show` prints.
#[derive(Debug, Clone)]
pub(crate) struct Show {
    /// `Show()`: the saved names in `HashMap` order; `Show(names)`: the names
    /// asked, each `true` when saved.
    names: Vec<(String, bool)>,
    all: bool,
}

impl Show {
    pub(crate) fn apply(&self, v: Value) -> Value {
        let text = match &v {
            Value::F64(x) => java_double(*x),
            other => other.to_string(),
        };
        let entry = |(name, saved): &(String, bool)| {
            format!("{name}={}", if *saved { text.as_str() } else { "NULL" })
        };
        let entries: Vec<String> = self.names.iter().map(entry).collect();
        Value::Str(if self.all {
            format!("{{{}}}", entries.join(", "))
        } else {
            format!("{{{}}}", entries.join(","))
        })
    }
}

/// Compiles `Show(...)` over the names `saved` so far in its chain.
pub(crate) fn compile(
    binding: &str,
    call: &Call,
    saved: &[(String, bool)],
) -> Result<(Func, Kind), BindingError> {
    let bad = |at: usize, what: String| BindingError::BadArguments {
        binding: binding.to_string(),
        at,
        function: call.name.clone(),
        what,
        usage: USAGE,
    };
    let mut asked = Vec::new();
    for arg in &call.args {
        match arg {
            Arg::Str(name, _) => asked.push(name.clone()),
            other => return Err(bad(other.at(), "needs quoted names".to_string())),
        }
    }
    let stale = |name: &str| saved.iter().any(|(n, live)| n == name && !live);
    let all = asked.is_empty();
    let names: Vec<(String, bool)> = if all {
        let hashes: Vec<i32> = saved.iter().map(|(n, _)| java_string_hash(n)).collect();
        java_hash_order(&hashes, None)
            .into_iter()
            .map(|i| (saved[i].0.clone(), true))
            .collect()
    } else {
        asked
            .into_iter()
            .map(|n| {
                let known = saved.iter().any(|(s, _)| *s == n);
                (n, known)
            })
            .collect()
    };
    if let Some((name, _)) = names.iter().find(|(n, known)| *known && stale(n)) {
        return Err(bad(
            call.at,
            format!(
                "shows `{name}`, saved before a function changed the value: paceline keeps no \
                 binding state, so `Show` shows only saves the value has passed unchanged \
                 since; move the `Save*('{name}')` next to the `Show`"
            ),
        ));
    }
    Ok((Func::Show(Box::new(Show { names, all })), Kind::Str))
}
