//! Bindings: named, deterministic functions of the cycle number.
//!
//! A binding is a chain of functions, written like NoSQLBench's:
//! `Hash(); Mod(1000000); ToString(); Prefix('key-')`. The chain starts with the
//! cycle (a `u64`) and each function takes the previous one's output. The same
//! cycle gives the same value on every run and every machine: there is no random
//! state, only a stable 64-bit hash (splitmix64) and deterministic arithmetic.
//! The syntax and every function are in `docs/bindings.md`.
//!
//! ```
//! use paceline::{BindingSet, Template, Value};
//! let set = BindingSet::compile([
//!     ("key", "Hash(); Mod(1000000); ToString(); Prefix('key-')"),
//!     ("size", "Hash(7); Range(10, 20)"),
//! ])?;
//! let t = Template::compile("SET {key} size={size}", &set).unwrap();
//! let mut buf = String::new();
//! t.render_into(42, &set, &mut buf);
//! assert_eq!(buf, t.render(42, &set)); // same cycle, same text, always
//! assert!(buf.starts_with("SET key-"));
//! assert!(matches!(set.eval(1, 42), Value::U64(10..20)));
//! # Ok::<(), paceline::BindingError>(())
//! ```

mod error;
mod func;
pub(crate) mod hash;
mod nb5;
mod parse;
mod template;
mod value;

pub use error::{BindingError, TemplateError};
pub use template::Template;
pub(crate) use template::{Piece, Token, is_inline, tokenize};
pub use value::{Kind, Value};

use func::Chain;
use std::fmt;

/// One compiled binding: a name, its expression, and the chain that evaluates it.
///
/// ```
/// use paceline::{Binding, Value};
/// let b = Binding::parse("bucket", "Hash(); Mod(16)")?;
/// assert_eq!(b.eval(7), b.eval(7));
/// assert!(matches!(b.eval(7), Value::U64(0..16)));
/// assert_eq!(b.expression(), "Hash(); Mod(16)");
/// # Ok::<(), paceline::BindingError>(())
/// ```
#[derive(Clone)]
pub struct Binding {
    name: String,
    expression: String,
    chain: Chain,
}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Binding")
            .field("name", &self.name)
            .field("expression", &self.expression)
            .field("kind", &self.chain.out())
            .finish()
    }
}

impl Binding {
    /// Parses and type-checks `expression` as the binding `name`.
    ///
    /// ```
    /// let err = paceline::Binding::parse("k", "Prefix('k'); Mod(3)").unwrap_err();
    /// assert!(err.to_string().contains("`Mod` takes an integer but the step before gives a string"));
    /// ```
    pub fn parse(name: &str, expression: &str) -> Result<Self, BindingError> {
        let calls = parse::parse(name, expression)?;
        let chain = func::compile(name, &calls, Kind::U64)?;
        Ok(Self {
            name: name.to_string(),
            expression: expression.to_string(),
            chain,
        })
    }

    /// The same binding under another name (a block's or an op's own binding
    /// goes into the activity's set under a scoped name).
    pub(crate) fn renamed(self, name: &str) -> Self {
        Self {
            name: name.to_string(),
            ..self
        }
    }

    /// The binding's name.
    ///
    /// ```
    /// assert_eq!(paceline::Binding::parse("k", "Identity()")?.name(), "k");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The expression as written.
    ///
    /// ```
    /// assert_eq!(paceline::Binding::parse("k", "Hash()")?.expression(), "Hash()");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The kind of value the binding produces.
    ///
    /// ```
    /// use paceline::{Binding, Kind};
    /// assert_eq!(Binding::parse("k", "Normal(0, 1)")?.kind(), Kind::F64);
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn kind(&self) -> Kind {
        self.chain.out()
    }

    /// The value for `cycle`. Numeric chains do not allocate.
    ///
    /// ```
    /// use paceline::{Binding, Value};
    /// assert_eq!(Binding::parse("k", "Add(5); Mod(10)")?.eval(7), Value::U64(2));
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    #[inline]
    pub fn eval(&self, cycle: u64) -> Value {
        self.chain.eval(Value::U64(cycle))
    }

    /// Appends the value for `cycle`, as text, to `buf`.
    ///
    /// ```
    /// let b = paceline::Binding::parse("k", "Mod(10); Prefix('n')")?;
    /// let mut buf = String::from(">");
    /// b.render_into(13, &mut buf);
    /// assert_eq!(buf, ">n3");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn render_into(&self, cycle: u64, buf: &mut String) {
        use std::fmt::Write;
        match self.eval(cycle) {
            Value::Str(s) => buf.push_str(&s),
            // Writing to a String cannot fail.
            other => {
                let _ = write!(buf, "{other}");
            }
        }
    }
}

/// The compiled bindings of an activity, addressed by name or by index.
///
/// ```
/// use paceline::BindingSet;
/// let set = BindingSet::compile([("a", "Identity()"), ("b", "Add(1)")])?;
/// assert_eq!(set.index_of("b"), Some(1));
/// assert_eq!(set.eval(1, 41).to_string(), "42");
/// assert_eq!(set.names().collect::<Vec<_>>(), ["a", "b"]);
/// # Ok::<(), paceline::BindingError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct BindingSet {
    bindings: Vec<Binding>,
}

impl BindingSet {
    /// Compiles `(name, expression)` pairs, in order. Stops at the first error;
    /// use [`compile_all`](Self::compile_all) to collect every error.
    ///
    /// ```
    /// assert!(paceline::BindingSet::compile([("x", "Mod(0)")]).is_err());
    /// ```
    pub fn compile<'a, I>(defs: I) -> Result<Self, BindingError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        Self::compile_all(defs).map_err(|mut errs| errs.swap_remove(0))
    }

    /// Compiles `(name, expression)` pairs and returns every error at once.
    ///
    /// ```
    /// let errs = paceline::BindingSet::compile_all([("x", "Mod(0)"), ("y", "Nope()")]).unwrap_err();
    /// assert_eq!(errs.len(), 2);
    /// ```
    pub fn compile_all<'a, I>(defs: I) -> Result<Self, Vec<BindingError>>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut bindings = Vec::new();
        let mut errors = Vec::new();
        for (name, expr) in defs {
            match Binding::parse(name, expr) {
                Ok(b) => bindings.push(b),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(Self { bindings })
        } else {
            Err(errors)
        }
    }

    pub(crate) fn from_bindings(bindings: Vec<Binding>) -> Self {
        Self { bindings }
    }

    /// How many bindings there are.
    ///
    /// ```
    /// assert_eq!(paceline::BindingSet::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.bindings.len()
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(paceline::BindingSet::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    /// The names, in definition order.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("k", "Hash()")])?;
    /// assert_eq!(set.names().next(), Some("k"));
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.bindings.iter().map(Binding::name)
    }

    /// The index of the binding called `name`.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("k", "Hash()")])?;
    /// assert_eq!(set.index_of("k"), Some(0));
    /// assert_eq!(set.index_of("x"), None);
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.bindings.iter().position(|b| b.name == name)
    }

    /// The binding called `name`.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("k", "Hash()")])?;
    /// assert_eq!(set.get("k").map(|b| b.expression()), Some("Hash()"));
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn get(&self, name: &str) -> Option<&Binding> {
        self.bindings.iter().find(|b| b.name == name)
    }

    /// The binding at `index`.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("k", "Hash()")])?;
    /// assert_eq!(set.at(0).name(), "k");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If `index >= len()`.
    pub fn at(&self, index: usize) -> &Binding {
        &self.bindings[index]
    }

    /// The value of binding `index` for `cycle`.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("k", "Mod(3)")])?;
    /// assert_eq!(set.eval(0, 5).to_string(), "2");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If `index >= len()`.
    #[inline]
    pub fn eval(&self, index: usize, cycle: u64) -> Value {
        self.bindings[index].eval(cycle)
    }

    /// A copy where the binding called `name` evaluates `expression` instead,
    /// under the same name and index: a template compiled against this set
    /// renders the new value where the old one went (`paceline check` writes a
    /// binding named for a secret `***` there). Without such a binding, an
    /// unchanged copy.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("k", "Mod(3)")])?;
    /// let t = paceline::Template::compile("k={k}", &set).unwrap();
    /// let masked = set.with_expression("k", "FixedValue('***')")?;
    /// assert_eq!((t.render(5, &set), t.render(5, &masked)), ("k=2".into(), "k=***".into()));
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn with_expression(&self, name: &str, expression: &str) -> Result<Self, BindingError> {
        let mut out = self.clone();
        if let Some(i) = self.index_of(name) {
            out.bindings[i] = Binding::parse(name, expression)?;
        }
        Ok(out)
    }

    /// Every binding's value for `cycle`, as a JSON object.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("k", "Mod(3)")])?;
    /// assert_eq!(set.to_json(5), serde_json::json!({"k": 2}));
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn to_json(&self, cycle: u64) -> serde_json::Value {
        serde_json::Value::Object(
            self.bindings
                .iter()
                .map(|b| (b.name.clone(), b.eval(cycle).into_json()))
                .collect(),
        )
    }
}
