//! Ops as NoSQLBench writes them: top-level `ops` (or `statements`) and
//! `blocks`, each block with its own `params`, `bindings`, `tags` and ops, and
//! op-level `params`, `bindings` and `tags`.
//!
//! Validation runs in two passes. The first walks the blocks and ops, compiles
//! every binding (the file's under its name, a block's as `BLOCK/NAME`, an op's
//! as `BLOCK/OP/NAME`, an inline `{{Expr()}}` under its expression) and keeps a
//! draft of each op; the second compiles each op's fields against the one
//! binding set, looking names up from the op's scope outwards
//! (`blocks_compile.rs`).

use super::bindings::{Binding, Token, tokenize};
use super::focus::Scope;
use super::locate::{Seg, Target};
use super::suggest;
use super::validate::{Raw, Validator, describe, is_name, key_text, push, show};
use serde_yaml::{Mapping, Value};
use std::collections::BTreeMap;

#[path = "blocks_compile.rs"]
mod compile;

/// The keys a block may have.
const BLOCK_KEYS: &[&str] = &[
    "name",
    "description",
    "params",
    "bindings",
    "tags",
    "ops",
    "statements",
    "op",
    "operation",
    "stmt",
    "statement",
];

/// The names NB5 reads a section of ops under (`OpsOwner`), in a block or at
/// the top of the file.
pub(crate) const OPS_KEYS: &[&str] = &["ops", "statements", "op", "operation", "stmt", "statement"];

/// Keys of an op map that are not fields.
const OP_META: &[&str] = &["ratio", "params", "bindings", "tags", "name", "description"];

/// The name of the block that top-level `ops` belong to.
pub(crate) const TOP_BLOCK: &str = "block0";

/// One op found, before its fields are compiled.
pub(crate) struct Draft<'v> {
    name: String,
    path: Vec<Seg>,
    value: &'v Value,
    /// Binding scopes, innermost first: `["main/read/", "main/", ""]`.
    scopes: Vec<String>,
    /// The block's `params` (ratio and default fields), with its path.
    block_params: Option<(Vec<Seg>, &'v Mapping)>,
    tags: BTreeMap<String, String>,
}

impl Draft<'_> {
    /// Where the op is in the file.
    pub(crate) fn path(&self) -> &[Seg] {
        &self.path
    }

    /// The op's full name (`BLOCK__OP`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

/// A block found: its name, path and map.
struct Block<'v> {
    name: String,
    path: Vec<Seg>,
    map: Option<&'v Mapping>,
    /// Top-level ops: `(path, value)` of `ops` or `statements`.
    top_ops: Option<(Vec<Seg>, &'v Value)>,
}

/// Tags as a map of name to text: a YAML map of scalars, or a list of names
/// (each a tag with an empty value, which a filter `NAME` selects); `None` for
/// anything else.
pub(crate) fn tag_map(v: &Value) -> Option<BTreeMap<String, String>> {
    match v {
        Value::Mapping(m) => Some(
            m.iter()
                .filter_map(|(k, v)| {
                    let k = key_text(k)?;
                    let v = match v {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => show(other),
                    };
                    Some((k, v))
                })
                .collect(),
        ),
        Value::Sequence(items) => Some(
            items
                .iter()
                .filter_map(|k| Some((key_text(k)?, String::new())))
                .collect(),
        ),
        Value::Null => Some(BTreeMap::new()),
        _ => None,
    }
}

impl Validator<'_> {
    /// Every op of the file, as drafts, with every binding compiled into
    /// `bindings` (the file's are already there). `ops` and `statements` are the
    /// top-level sections, `blocks` the blocks; `doc_tags` the file's `tags`.
    pub(crate) fn op_drafts<'v>(
        &mut self,
        top_ops: Option<(Vec<Seg>, &'v Value)>,
        blocks: Option<(Vec<Seg>, &'v Value)>,
        doc_tags: &BTreeMap<String, String>,
        bindings: &mut Vec<Binding>,
    ) -> Vec<Draft<'v>> {
        let mut found: Vec<Block<'v>> = Vec::new();
        if let Some((p, v)) = top_ops {
            found.push(Block {
                name: TOP_BLOCK.to_string(),
                path: vec![],
                map: None,
                top_ops: Some((p, v)),
            });
        }
        match blocks {
            None | Some((_, Value::Null)) => {}
            Some((p, Value::Mapping(m))) => {
                for (name, bp, bv) in self.entries(m, &p) {
                    match bv {
                        Value::Mapping(bm) => found.push(Block {
                            name,
                            path: bp,
                            map: Some(bm),
                            top_ops: None,
                        }),
                        other => self.problem(
                            bp,
                            Target::Value,
                            format!("block `{name}` is {}, not a map", describe(other)),
                            Some(BLOCK_HELP.into()),
                        ),
                    }
                }
            }
            Some((p, Value::Sequence(items))) => {
                for (i, item) in items.iter().enumerate() {
                    let bp = push(&p, Seg::Index(i));
                    match item {
                        Value::Mapping(bm) => {
                            let name = bm
                                .get("name")
                                .and_then(Value::as_str)
                                .map_or_else(|| format!("block{}", i + 1), str::to_string);
                            found.push(Block {
                                name,
                                path: bp,
                                map: Some(bm),
                                top_ops: None,
                            });
                        }
                        other => self.problem(
                            bp,
                            Target::Value,
                            format!("a block is a map, not {}", describe(other)),
                            Some(BLOCK_HELP.into()),
                        ),
                    }
                }
            }
            Some((p, other)) => self.problem(
                p,
                Target::Value,
                format!(
                    "`blocks` is a map or a list of blocks, not {}",
                    describe(other)
                ),
                Some(BLOCK_HELP.into()),
            ),
        }

        let mut drafts = Vec::new();
        for block in found {
            self.block_drafts(block, doc_tags, bindings, &mut drafts);
        }
        drafts
    }

    fn block_drafts<'v>(
        &mut self,
        block: Block<'v>,
        doc_tags: &BTreeMap<String, String>,
        bindings: &mut Vec<Binding>,
        drafts: &mut Vec<Draft<'v>>,
    ) {
        let top = block.map.is_none();
        let mut tags = doc_tags.clone();
        let mut params = None;
        let mut ops = block.top_ops;
        let block_scope = if top {
            String::new()
        } else {
            format!("{}/", block.name)
        };
        if !top && !is_name(&block.name) {
            self.problem(
                block.path.clone(),
                Target::Key,
                format!("`{}` is not a usable block name", block.name),
                Some("use letters, digits, `_`, `-` and `.`".into()),
            );
        }
        // A block's own problems (an unknown key, no ops) matter to the steps
        // that select its ops: NB5 ignores a block's unknown keys, and a block
        // without ops gives no op.
        let n0 = self.problems.len();
        if let Some(m) = block.map {
            for (k, kp, kv) in self.entries(m, &block.path) {
                match (k.as_str(), kv) {
                    ("name" | "description", _) => {}
                    ("params", Value::Mapping(pm)) => params = Some((kp, pm)),
                    ("bindings", Value::Mapping(bm)) => {
                        self.scoped_bindings(bm, &kp, &block_scope, bindings)
                    }
                    ("tags", v) if tag_map(v).is_some() => {
                        tags.extend(tag_map(v).unwrap_or_default())
                    }
                    (k, v) if OPS_KEYS.contains(&k) => {
                        if let Some((first, _)) = &ops {
                            let first = match first.last() {
                                Some(Seg::Key(f)) => f.clone(),
                                _ => "ops".to_string(),
                            };
                            self.problem(
                                kp,
                                Target::Key,
                                format!("both `{first}` and `{k}` in block `{}`", block.name),
                                Some("both name the block's ops: keep one".into()),
                            );
                        } else {
                            ops = Some((kp, v));
                        }
                    }
                    ("params" | "bindings" | "tags", Value::Null) => {}
                    ("params" | "bindings" | "tags", other) => {
                        let msg = format!("`{k}` in a block is a map, not {}", describe(other));
                        self.problem(kp, Target::Value, msg, None);
                    }
                    // A block indented under another (`schema_astra:` inside
                    // `schema:`): NB5 ignores a block's unknown keys, so its
                    // ops never run there either.
                    (other, Value::Mapping(inner))
                        if inner
                            .keys()
                            .filter_map(key_text)
                            .any(|k| OPS_KEYS.contains(&k.as_str())) =>
                    {
                        self.scopes.notes.push(format!(
                            "`{other}` inside block `{}` holds ops but is not a block (it is \
                             indented under `{}`): NB5 ignores it, and so does paceline; \
                             outdent it to make it a block",
                            block.name, block.name
                        ));
                    }
                    (other, _) => {
                        let help = suggest::did_you_mean(other, BLOCK_KEYS.iter().copied())
                            .unwrap_or_else(|| {
                                format!(
                                    "a block's keys are {}",
                                    suggest::list(BLOCK_KEYS.iter().copied())
                                )
                            });
                        self.problem(
                            kp,
                            Target::Key,
                            format!("unknown key `{other}` in block `{}`", block.name),
                            Some(help),
                        );
                    }
                }
            }
        }
        tags.insert("block".to_string(), block.name.clone());
        let Some((ops_path, ops_value)) = ops else {
            self.problem(
                block.path,
                Target::Key,
                format!("block `{}` has no `ops`", block.name),
                Some(BLOCK_HELP.into()),
            );
            self.scope_from(n0, Scope::Block(block.name.clone()));
            return;
        };
        if !top {
            self.scope_from(n0, Scope::Block(block.name.clone()));
        }
        let named = self.named_ops(&ops_path, ops_value);
        for (short, path, value) in named {
            let name = if top {
                short.clone()
            } else {
                format!("{}__{short}", block.name)
            };
            let op_scope = format!("{block_scope}{short}/");
            let mut op_tags = tags.clone();
            let n0 = self.problems.len();
            if let Value::Mapping(m) = value {
                for (k, kp, kv) in self.entries(m, &path) {
                    match (k.as_str(), kv) {
                        ("bindings", Value::Mapping(bm)) => {
                            self.scoped_bindings(bm, &kp, &op_scope, bindings)
                        }
                        ("tags", v) if tag_map(v).is_some() => {
                            op_tags.extend(tag_map(v).unwrap_or_default())
                        }
                        ("bindings" | "params", Value::Mapping(_) | Value::Null) => {}
                        ("bindings" | "tags" | "params", other) => {
                            let msg = format!("`{k}` in an op is a map, not {}", describe(other));
                            self.problem(kp, Target::Value, msg, None);
                        }
                        _ => {}
                    }
                }
            }
            op_tags.insert("name".to_string(), name.clone());
            op_tags.insert("op".to_string(), short);
            self.scope_from(n0, Scope::Op(name.clone()));
            self.op_seen(&name, &op_tags, value);
            let mut scopes = vec![op_scope];
            if !top {
                scopes.push(block_scope.clone());
            }
            scopes.push(String::new());
            drafts.push(Draft {
                name,
                path,
                value,
                scopes,
                block_params: params.clone(),
                tags: op_tags,
            });
        }
    }

    /// The ops of an `ops` section as (name, path, value): a map of name to op,
    /// or a list of ops (a string, a one-key map `name: op`, or a map with
    /// `name`; unnamed ones are `stmt1`, `stmt2`, ...).
    fn named_ops<'v>(&mut self, path: &[Seg], v: &'v Value) -> Vec<(String, Vec<Seg>, &'v Value)> {
        match v {
            Value::Mapping(m) if !m.is_empty() => self.entries(m, path),
            Value::Sequence(items) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let p = push(path, Seg::Index(i));
                    match item {
                        Value::Mapping(m) if m.len() == 1 => {
                            let (k, val) = m.iter().next().unwrap_or_else(|| unreachable!("len 1"));
                            match key_text(k) {
                                Some(name)
                                    if !OP_META.contains(&name.as_str())
                                        && matches!(val, Value::String(_) | Value::Mapping(_)) =>
                                {
                                    let vp = push(&p, Seg::Key(name.clone()));
                                    (name, vp, val)
                                }
                                _ => (format!("stmt{}", i + 1), p, item),
                            }
                        }
                        Value::Mapping(m) => {
                            let name = m
                                .get("name")
                                .and_then(Value::as_str)
                                .map_or_else(|| format!("stmt{}", i + 1), str::to_string);
                            (name, p, item)
                        }
                        _ => (format!("stmt{}", i + 1), p, item),
                    }
                })
                .collect(),
            // NB5 reads one string as one op, `stmt1` (`OpsOwner.setOpsFieldByType`).
            Value::String(_) => vec![("stmt1".to_string(), path.to_vec(), v)],
            other => {
                self.problem(
                    path.to_vec(),
                    Target::Key,
                    format!("`ops` needs at least one op, and is {}", describe(other)),
                    Some(super::validate::OPS_HELP.into()),
                );
                Vec::new()
            }
        }
    }

    /// Compiles a `bindings` map of a block or an op, each under `scope` + name.
    fn scoped_bindings(
        &mut self,
        m: &Mapping,
        path: &[Seg],
        scope: &str,
        bindings: &mut Vec<Binding>,
    ) {
        for (name, p, v) in self.entries(m, path) {
            let n0 = self.problems.len();
            let b = self.binding(&name, p, v);
            self.scope_from(n0, Scope::Binding(name.clone()));
            bindings.push(b.renamed(&format!("{scope}{name}")));
        }
    }

    /// Compiles every inline binding (`{{Mod(10)}}`) in the drafts' strings,
    /// once per distinct expression, named by the expression.
    pub(crate) fn inline_bindings(&mut self, drafts: &[Draft<'_>], bindings: &mut Vec<Binding>) {
        fn walk<'v>(path: &[Seg], v: &'v Value, out: &mut Vec<(Vec<Seg>, &'v str)>) {
            match v {
                Value::String(s) => out.push((path.to_vec(), s)),
                Value::Sequence(items) => {
                    for (i, item) in items.iter().enumerate() {
                        walk(&push(path, Seg::Index(i)), item, out);
                    }
                }
                Value::Mapping(m) => {
                    for (k, item) in m {
                        if let Some(k) = key_text(k) {
                            walk(&push(path, Seg::Key(k)), item, out);
                        }
                    }
                }
                _ => {}
            }
        }
        for d in drafts {
            let mut strings = Vec::new();
            walk(&d.path, d.value, &mut strings);
            let n0 = self.problems.len();
            self.draft_inline_bindings(strings, bindings);
            self.scope_from(n0, Scope::Op(d.name.clone()));
        }
    }

    fn draft_inline_bindings(
        &mut self,
        strings: Vec<(Vec<Seg>, &str)>,
        bindings: &mut Vec<Binding>,
    ) {
        for (path, text) in strings {
            for token in tokenize(text) {
                let Token::Name { name, at } = token else {
                    continue;
                };
                if !super::bindings::is_inline(name) || bindings.iter().any(|b| b.name() == name) {
                    continue;
                }
                match Binding::parse(name, name) {
                    Ok(b) => bindings.push(b),
                    Err(e) => {
                        // `at` is the `{{`; the expression starts after it and
                        // any spaces.
                        let lead = text
                            .chars()
                            .skip(at + 2)
                            .take_while(|c| c.is_whitespace())
                            .count();
                        self.problems.push(Raw {
                            path,
                            target: Target::Value,
                            offset: Some(at + 2 + lead + e.offset()),
                            message: format!("inline binding: {}", e.detail()),
                            help: None,
                        });
                        break;
                    }
                }
            }
        }
    }
}

const BLOCK_HELP: &str = "a block is a map with `ops` (and optionally `params`, `bindings`, \
                          `tags`), such as `blocks: {main: {ops: {read: 'GET {key}'}}}`";
