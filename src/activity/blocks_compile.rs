//! The second pass over the ops (see `blocks.rs`): each draft's fields compiled
//! against the one binding set, names looked up from the op's scope outwards;
//! op and block `params` give `ratio` and default fields. It runs once per op
//! when the activity is validated.

use super::{Draft, OP_META};
use crate::activity::bindings::{BindingSet, Template, TemplateError, is_inline};
use crate::activity::locate::{Seg, Target};
use crate::activity::model::{Field, Op};
use crate::activity::validate::{OP_HELP, Raw, Validator, describe, push, show};
use serde_yaml::{Mapping, Value};

impl Validator<'_> {
    /// The op a draft describes, its fields compiled against `set`.
    pub(crate) fn draft_op<'v>(&mut self, d: Draft<'v>, set: &BindingSet) -> Option<Op> {
        let mut ratio = 1;
        let mut fields: Vec<(String, Field)> = Vec::new();
        // Op params (a block's, then the op's own): `ratio`, and default fields.
        let mut param_fields: Vec<(String, Vec<Seg>, &'v Value)> = Vec::new();
        if let Some((p, m)) = &d.block_params {
            self.op_params(p, m, &mut ratio, &mut param_fields);
        }
        match d.value {
            Value::String(_) => {
                let f = self.field_scoped(&d.path, d.value, set, &d.scopes)?;
                fields.push(("stmt".to_string(), f));
            }
            Value::Mapping(m) => {
                let entries = self.entries(m, &d.path);
                if let Some((_, p, Value::Mapping(pm))) =
                    entries.iter().find(|(k, _, _)| k == "params")
                {
                    self.op_params(p, pm, &mut ratio, &mut param_fields);
                }
                for (k, p, fv) in entries {
                    match k.as_str() {
                        "ratio" => {
                            if let Some(r) = self.ratio(&p, fv) {
                                ratio = r;
                            }
                        }
                        _ if OP_META.contains(&k.as_str()) => {}
                        "op" if matches!(fv, Value::Mapping(_)) => {
                            let Value::Mapping(om) = fv else { continue };
                            for (ok, op, ov) in self.entries(om, &p) {
                                if let Some(f) = self.field_scoped(&op, ov, set, &d.scopes) {
                                    fields.push((ok, f));
                                }
                            }
                        }
                        "op" | "stmt" | "statement" => {
                            if let Some(f) = self.field_scoped(&p, fv, set, &d.scopes) {
                                fields.push(("stmt".to_string(), f));
                            }
                        }
                        _ => {
                            if let Some(f) = self.field_scoped(&p, fv, set, &d.scopes) {
                                fields.push((k, f));
                            }
                        }
                    }
                }
            }
            other => {
                self.problem(
                    d.path,
                    Target::Value,
                    format!("op `{}` is {}", d.name, describe(other)),
                    Some(OP_HELP.into()),
                );
                return None;
            }
        }
        let mut from_params = Vec::new();
        for (k, p, pv) in param_fields {
            if fields.iter().any(|(n, _)| *n == k) {
                continue;
            }
            if let Some(f) = self.field_scoped(&p, pv, set, &d.scopes) {
                from_params.push(k.clone());
                fields.push((k, f));
            }
        }
        Some(Op {
            name: d.name,
            ratio,
            fields,
            tags: d.tags,
            param_fields: from_params,
        })
    }

    /// Reads op params: `ratio` into `ratio`, any other key into `out` (a later
    /// one replacing an earlier one of the same name).
    fn op_params<'v>(
        &mut self,
        path: &[Seg],
        m: &'v Mapping,
        ratio: &mut u64,
        out: &mut Vec<(String, Vec<Seg>, &'v Value)>,
    ) {
        for (k, p, pv) in self.entries(m, path) {
            if k == "ratio" {
                if let Some(r) = self.ratio(&p, pv) {
                    *ratio = r;
                }
            } else {
                out.retain(|(n, _, _)| *n != k);
                out.push((k, p, pv));
            }
        }
    }

    fn ratio(&mut self, p: &[Seg], v: &Value) -> Option<u64> {
        let r = v.as_u64();
        if r.is_none() {
            self.problem(
                p.to_vec(),
                Target::Value,
                format!(
                    "`ratio` must be a whole number of at least 0, not `{}`",
                    show(v)
                ),
                None,
            );
        }
        r
    }

    /// A field, its templates compiled in `scopes`.
    pub(crate) fn field_scoped(
        &mut self,
        path: &[Seg],
        v: &Value,
        set: &BindingSet,
        scopes: &[String],
    ) -> Option<Field> {
        Some(match v {
            Value::String(s) => match Template::compile_scoped(s, set, scopes) {
                Ok(t) => Field::Text(t),
                Err(errs) => {
                    // An inline binding that did not compile was reported already.
                    let errs = errs.into_iter().filter(|e| {
                        let TemplateError::UnknownBinding { name, .. } = e;
                        !is_inline(name)
                    });
                    for e in errs {
                        self.problems.push(Raw {
                            path: path.to_vec(),
                            target: Target::Value,
                            offset: Some(e.offset()),
                            message: e.to_string(),
                            help: None,
                        });
                    }
                    return None;
                }
            },
            Value::Null | Value::Bool(_) | Value::Number(_) => {
                Field::Literal(serde_json::to_value(v).unwrap_or(serde_json::Value::Null))
            }
            Value::Sequence(items) => Field::List(
                items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| {
                        self.field_scoped(&push(path, Seg::Index(i)), item, set, scopes)
                    })
                    .collect(),
            ),
            Value::Mapping(m) => Field::Map(
                self.entries(m, path)
                    .into_iter()
                    .filter_map(|(k, p, fv)| self.field_scoped(&p, fv, set, scopes).map(|f| (k, f)))
                    .collect(),
            ),
            Value::Tagged(_) => {
                self.problem(
                    path.to_vec(),
                    Target::Value,
                    "tagged values (`!tag`) are not supported in ops",
                    Some("remove the tag (see docs/nb5.md)".into()),
                );
                return None;
            }
        })
    }
}
