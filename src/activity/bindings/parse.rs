//! The expression syntax: `Hash(); Mod(1000); ToString(); Prefix('key-')`.
//!
//! ```text
//! expr  := ['compose'] chain
//! chain := call ((';' | whitespace) call)* [';']   (calls side by side only at the top)
//! call  := NAME '(' [arg (',' arg)*] ')'
//! arg   := NUMBER | STRING | chain           (a chain only where a function takes one)
//! NUMBER: -12, 3.5, 1e6, 10K, 2M, 1B (K, M, B multiply by 1e3, 1e6, 1e9; `_` may group digits)
//! STRING: 'single' or "double" quoted; \\ \' \" \n \t escapes
//! ```
//!
//! NB5's grammar (virtdata's `VirtData.g4`, read by ANTLR) gives the rest:
//! paceline reads what NB5 reads, and beyond it only its own chain arguments.
//!
//! - `compose` before the chain is NB5's old keyword, dropped (NB5 warns that it
//!   is no longer needed); calls side by side (`Hash() Mod(3)`) are a chain, as
//!   NB5's `virtdataFlow` takes them.
//! - The first call of the chain may end its arguments at `;` or at the end
//!   without its `)`: `CqlVector(ListSizedHashed(5, HashRange(0.0f, 1.0f)); Norm()`
//!   is `CqlVector(...); Norm()`, as ANTLR's recovery conjures the missing `)`
//!   there without an error node, so NB5 builds the binding (it prints
//!   "mismatched input" and goes on). An argument is then one call, as in NB5's
//!   grammar. Any other unclosed call NB5 refuses, and so does paceline.
//!   (Checked by building `VirtData.g4` with ANTLR and parsing these cases.)
//! - A `)` too many after the chain NB5 refuses (an error node: "Error parsing
//!   input"), and so does paceline, saying NB5 cannot run it either.

use super::error::BindingError;

/// A parsed call, before type checking.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub(crate) name: String,
    /// Character offset of the name in the expression.
    pub(crate) at: usize,
    pub(crate) args: Vec<Arg>,
    /// A NoSQLBench `-> type` after the call (`Uniform(0, 9) -> int`), with the
    /// character offset of the type's name.
    pub(crate) ty: Option<(String, usize)>,
}

/// A parsed argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    /// An integer literal (fits i64 or u64).
    Int(i128, usize),
    /// A literal with a fraction or exponent.
    Float(f64, usize),
    /// A quoted string.
    Str(String, usize),
    /// A nested chain, such as a `Template` argument.
    Chain(Vec<Call>, usize),
}

impl Arg {
    pub(crate) fn at(&self) -> usize {
        match self {
            Arg::Int(_, at) | Arg::Float(_, at) | Arg::Str(_, at) | Arg::Chain(_, at) => *at,
        }
    }

    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Arg::Int(..) => "an integer",
            Arg::Float(..) => "a number",
            Arg::Str(..) => "a string",
            Arg::Chain(..) => "a function chain",
        }
    }
}

struct Parser<'a> {
    binding: &'a str,
    chars: Vec<char>,
    pos: usize,
    /// NB5's recovery: the chain's first call may end at `;` or the end without
    /// its `)`, and each argument is one call (NB5's `cmdParam`), not a chain.
    open_first: bool,
}

/// Parses a whole expression into its chain of calls.
pub(crate) fn parse(binding: &str, expr: &str) -> Result<Vec<Call>, BindingError> {
    let mut p = Parser {
        binding,
        chars: expr.chars().collect(),
        pos: 0,
        open_first: false,
    };
    p.skip_ws();
    if p.pos == p.chars.len() {
        return Err(p.syntax(
            0,
            "the expression is empty",
            "write a chain of functions such as `Hash(); Mod(100)`",
        ));
    }
    // NB5's `compose` keyword: a word of its own before the chain.
    if p.chars[p.pos..].starts_with(&['c', 'o', 'm', 'p', 'o', 's', 'e'])
        && p.chars.get(p.pos + 7).is_some_and(|c| c.is_whitespace())
    {
        p.pos += 7;
    }
    let start = p.pos;
    let strict = p.whole_chain();
    if strict.is_ok() {
        return strict;
    }
    // NB5's recovery of a first call left open (module docs): tried only where
    // the chain as written does not parse, so a chain that does keeps its meaning.
    p.pos = start;
    p.open_first = true;
    p.whole_chain().or(strict)
}

impl Parser<'_> {
    /// The top-level chain and nothing after it.
    fn whole_chain(&mut self) -> Result<Vec<Call>, BindingError> {
        let chain = self.chain(true)?;
        self.skip_ws();
        match self.peek() {
            None => Ok(chain),
            Some(')') => Err(self.syntax(
                self.pos,
                "a `)` too many after the chain",
                "remove it: NB5's parser refuses it too (ANTLR's \"extraneous input ')'\", then \
                 \"Error parsing input\"), so NB5 cannot run this binding either",
            )),
            Some(c) => Err(self.syntax(
                self.pos,
                &format!("unexpected `{c}` after the chain"),
                "separate functions with `;`, as in `Hash(); Mod(100)`",
            )),
        }
    }

    fn syntax(&self, at: usize, what: &str, fix: &str) -> BindingError {
        BindingError::Syntax {
            binding: self.binding.to_string(),
            at,
            what: what.to_string(),
            fix: fix.to_string(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// A `-> type` annotation, if one comes next.
    fn annotation(&mut self) -> Result<Option<(String, usize)>, BindingError> {
        self.skip_ws();
        if !(self.peek() == Some('-') && self.chars.get(self.pos + 1) == Some(&'>')) {
            return Ok(None);
        }
        self.pos += 2;
        self.skip_ws();
        let at = self.pos;
        let mut name = String::new();
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_alphanumeric() || *c == '.' || *c == '_')
        {
            name.push(c);
            self.pos += 1;
        }
        if name.is_empty() {
            return Err(self.syntax(
                at,
                "expected a type after `->`",
                "write a type such as `-> String`, `-> long` or `-> double`, or leave it out",
            ));
        }
        Ok(Some((name, at)))
    }

    /// A chain: `top` for the binding's own, where calls may stand side by
    /// side and the first may be left open (NB5's recovery); else an argument.
    fn chain(&mut self, top: bool) -> Result<Vec<Call>, BindingError> {
        let mut first = self.call(top && self.open_first)?;
        first.ty = self.annotation()?;
        let mut calls = vec![first];
        loop {
            self.skip_ws();
            if self.peek() != Some(';') {
                // NB5's `virtdataFlow` takes calls side by side: `Hash() Mod(3)`.
                if top && self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                    let mut call = self.call(false)?;
                    call.ty = self.annotation()?;
                    calls.push(call);
                    continue;
                }
                return Ok(calls);
            }
            if !top && self.open_first {
                // An argument is one call in NB5's grammar: `;` ends the call
                // left open (below), not the argument's chain.
                return Ok(calls);
            }
            self.pos += 1;
            self.skip_ws();
            match self.peek() {
                None | Some(',') | Some(')') => return Ok(calls),
                _ => {
                    let mut call = self.call(false)?;
                    call.ty = self.annotation()?;
                    calls.push(call);
                }
            }
        }
    }

    /// A call; `open` lets it end its arguments at `;` or the end without its
    /// `)` (NB5's recovery of the chain's first call: module docs).
    fn call(&mut self, open: bool) -> Result<Call, BindingError> {
        self.skip_ws();
        let at = self.pos;
        let mut name = String::new();
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            name.push(c);
            self.pos += 1;
        }
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            let found = self
                .peek()
                .map_or("the end".to_string(), |c| format!("`{c}`"));
            return Err(self.syntax(
                at,
                &format!("expected a function name, found {found}"),
                "start each step with a function such as `Hash()` or `Mod(100)`",
            ));
        }
        self.skip_ws();
        // NB5's typed lambda `long->ToString()`: the input type of the function
        // that follows (a chain's input here is always the integer before it).
        if self.peek() == Some('-') && self.chars.get(self.pos + 1) == Some(&'>') {
            const INPUTS: &[&str] = &["long", "Long", "int", "Integer", "Object"];
            if !INPUTS.contains(&name.as_str()) {
                return Err(self.syntax(
                    at,
                    &format!("`{name}->` is not an input type paceline reads"),
                    "write `long->` (or `int->`) before the function, or leave it out",
                ));
            }
            self.pos += 2;
            return self.call(open);
        }
        if self.peek() != Some('(') {
            return Err(self.syntax(
                self.pos,
                &format!("expected `(` after `{name}`"),
                &format!(
                    "call a function with parentheses, as in `{name}()`, or quote text: `'{name}'`"
                ),
            ));
        }
        self.pos += 1;
        let mut args = Vec::new();
        self.skip_ws();
        let closed = self.peek() == Some(')');
        if closed || (open && matches!(self.peek(), None | Some(';'))) {
            self.pos += usize::from(closed);
            return Ok(Call {
                name,
                at,
                args,
                ty: None,
            });
        }
        loop {
            args.push(self.arg()?);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(Call {
                        name,
                        at,
                        args,
                        ty: None,
                    });
                }
                None | Some(';') if open => {
                    return Ok(Call {
                        name,
                        at,
                        args,
                        ty: None,
                    });
                }
                other => {
                    let found = other.map_or("the end".to_string(), |c| format!("`{c}`"));
                    return Err(self.syntax(
                        self.pos,
                        &format!("expected `,` or `)` in the arguments of `{name}`, found {found}"),
                        "separate arguments with `,` and close the call with `)`",
                    ));
                }
            }
        }
    }

    fn arg(&mut self) -> Result<Arg, BindingError> {
        self.skip_ws();
        let at = self.pos;
        match self.peek() {
            Some(q @ ('\'' | '"')) => self.string(q, at),
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => self.number(at),
            Some(c) if c.is_ascii_alphabetic() => Ok(Arg::Chain(self.chain(false)?, at)),
            other => {
                let found = other.map_or("the end".to_string(), |c| format!("`{c}`"));
                Err(self.syntax(
                    at,
                    &format!("expected an argument, found {found}"),
                    "give a number (`100`, `2.5`, `10K`), a quoted string (`'a'`) or a function",
                ))
            }
        }
    }

    fn string(&mut self, quote: char, at: usize) -> Result<Arg, BindingError> {
        self.pos += 1;
        let mut s = String::new();
        loop {
            match self.peek() {
                None => {
                    return Err(self.syntax(
                        at,
                        "unterminated string",
                        &format!("close the string with {quote}"),
                    ));
                }
                Some(c) if c == quote => {
                    self.pos += 1;
                    return Ok(Arg::Str(s, at));
                }
                Some('\\') => {
                    self.pos += 1;
                    let c = match self.peek() {
                        Some('n') => '\n',
                        Some('t') => '\t',
                        Some(c @ ('\\' | '\'' | '"')) => c,
                        // Any other escape is kept as written (NB5 passes `\]`
                        // through to the regular expressions of `ReplaceAll`).
                        Some(c) => {
                            s.push('\\');
                            c
                        }
                        None => continue,
                    };
                    s.push(c);
                    self.pos += 1;
                }
                Some(c) => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn number(&mut self, at: usize) -> Result<Arg, BindingError> {
        let mut text = String::new();
        while let Some(c) = self
            .peek()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
        {
            if c != '_' {
                text.push(c);
            }
            self.pos += 1;
        }
        parse_number(&text)
            .ok_or_else(|| {
                self.syntax(
                at,
                &format!("`{text}` is not a number"),
                "write numbers as `100`, `-5`, `2.5`, `1e6`, or with a suffix: `10K`, `2M`, `1B`",
            )
            })
            .map(|n| match n {
                Num::Int(i) => Arg::Int(i, at),
                Num::Float(f) => Arg::Float(f, at),
            })
    }
}

enum Num {
    Int(i128),
    Float(f64),
}

fn parse_number(text: &str) -> Option<Num> {
    // Java's literal suffixes, as NB5 files write them: `100L` is an integer,
    // `0.0f` and `-180d` are floats.
    if let Some(digits) = text.strip_suffix(['L', 'l'])
        && let Ok(i) = digits.parse::<i64>()
    {
        return Some(Num::Int(i as i128));
    }
    if let Some(digits) = text.strip_suffix(['f', 'F', 'd', 'D'])
        && !digits.is_empty()
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
    {
        return digits
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Num::Float);
    }
    let (digits, mult) = match text.chars().last()? {
        'K' | 'k' => (&text[..text.len() - 1], 1_000i128),
        'M' | 'm' => (&text[..text.len() - 1], 1_000_000),
        'B' | 'b' | 'G' | 'g' => (&text[..text.len() - 1], 1_000_000_000),
        _ => (text, 1),
    };
    if digits.is_empty() {
        return None;
    }
    if let Ok(i) = digits.parse::<i128>() {
        let v = i.checked_mul(mult)?;
        return (v >= i64::MIN as i128 && v <= u64::MAX as i128).then_some(Num::Int(v));
    }
    let f: f64 = digits.parse().ok()?;
    let v = f * mult as f64;
    if !v.is_finite() {
        return None;
    }
    // 2.5K is an integer: keep it one when it is whole.
    if mult > 1 && v.fract() == 0.0 && v.abs() < 9.0e15 {
        return Some(Num::Int(v as i128));
    }
    Some(Num::Float(v))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
