//! Why a binding expression or a template was rejected.

use super::value::Kind;
use std::error::Error;
use std::fmt;

/// Why a binding expression was rejected. Every variant names the binding and the
/// character offset in its expression (0-based) where the problem starts.
///
/// ```
/// use paceline::{Binding, BindingError};
/// let err = Binding::parse("id", "Hash(); Mdo(10)").unwrap_err();
/// assert!(matches!(err, BindingError::UnknownFunction { at: 8, .. }));
/// assert!(err.to_string().contains("did you mean `Mod`?"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BindingError {
    /// The expression is not well formed. Write functions separated by `;`, each
    /// called with parentheses: `Hash(); Mod(100); ToString()`.
    Syntax {
        /// The binding's name.
        binding: String,
        /// Character offset of the problem.
        at: usize,
        /// What was wrong.
        what: String,
        /// How to fix it.
        fix: String,
    },
    /// No function has this name. Use one of the functions listed in the message
    /// (see `docs/bindings.md`); names are case-sensitive.
    UnknownFunction {
        /// The binding's name.
        binding: String,
        /// Character offset of the name.
        at: usize,
        /// The name that was not found.
        name: String,
        /// The closest function name, if any is close.
        suggestion: Option<String>,
    },
    /// A NoSQLBench function that paceline does not have. The message says what
    /// to write instead; `docs/nb5.md` lists every NB5 function and its fate.
    Unsupported {
        /// The binding's name.
        binding: String,
        /// Character offset of the name.
        at: usize,
        /// The NB5 function.
        name: String,
        /// What to write instead.
        instead: &'static str,
    },
    /// The function exists but was given the wrong arguments. Call it as its usage
    /// line in the message shows.
    BadArguments {
        /// The binding's name.
        binding: String,
        /// Character offset of the call or the bad argument.
        at: usize,
        /// The function.
        function: String,
        /// What was wrong with the arguments.
        what: String,
        /// How the function is called.
        usage: &'static str,
    },
    /// The function cannot take what the step before it produces, for example
    /// `Mod` after `ToString`. Reorder the chain or convert first.
    TypeMismatch {
        /// The binding's name.
        binding: String,
        /// Character offset of the function.
        at: usize,
        /// The function.
        function: String,
        /// What it takes, in words.
        takes: &'static str,
        /// What it gets.
        gets: Kind,
    },
}

impl BindingError {
    /// The name of the binding the error is in.
    ///
    /// ```
    /// let err = paceline::Binding::parse("key", "Nope()").unwrap_err();
    /// assert_eq!(err.binding(), "key");
    /// ```
    pub fn binding(&self) -> &str {
        match self {
            Self::Syntax { binding, .. }
            | Self::UnknownFunction { binding, .. }
            | Self::Unsupported { binding, .. }
            | Self::BadArguments { binding, .. }
            | Self::TypeMismatch { binding, .. } => binding,
        }
    }

    /// Character offset in the expression where the problem starts.
    ///
    /// ```
    /// let err = paceline::Binding::parse("key", "Hash(); Nope()").unwrap_err();
    /// assert_eq!(err.offset(), 8);
    /// ```
    pub fn offset(&self) -> usize {
        match self {
            Self::Syntax { at, .. }
            | Self::UnknownFunction { at, .. }
            | Self::Unsupported { at, .. }
            | Self::BadArguments { at, .. }
            | Self::TypeMismatch { at, .. } => *at,
        }
    }

    /// The message without the binding name and offset prefix.
    pub(crate) fn detail(&self) -> String {
        match self {
            Self::Syntax { what, fix, .. } => format!("{what}; {fix}"),
            Self::UnknownFunction {
                name, suggestion, ..
            } => {
                let hint = match suggestion {
                    Some(s) => format!("did you mean `{s}`? "),
                    None => String::new(),
                };
                format!(
                    "unknown function `{name}`; {hint}known functions: {}",
                    super::func::NAMES.join(", ")
                )
            }
            Self::Unsupported { name, instead, .. } => format!(
                "`{name}` is a NoSQLBench function that paceline does not support: {instead} \
                 (see docs/nb5.md)"
            ),
            Self::BadArguments {
                function,
                what,
                usage,
                ..
            } => format!("`{function}` {what}; use {usage}"),
            Self::TypeMismatch {
                function,
                takes,
                gets,
                ..
            } => format!(
                "`{function}` takes {takes} but the step before gives {gets}; reorder the \
                 chain or convert first (ToString(), ToFloat(), ToInt())"
            ),
        }
    }
}

impl fmt::Display for BindingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "binding `{}`, at character {}: {}",
            self.binding(),
            self.offset() + 1,
            self.detail()
        )
    }
}

impl Error for BindingError {}

/// Why an op template was rejected.
///
/// ```
/// use paceline::{BindingSet, Template, TemplateError};
/// let set = BindingSet::compile([("key", "Hash(); ToString()")]).unwrap();
/// let err = Template::compile("get {kye}", &set).unwrap_err();
/// assert!(matches!(&err[0], TemplateError::UnknownBinding { at: 4, .. }));
/// assert!(err[0].to_string().contains("did you mean `key`?"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `{name}` placeholder names no binding. Define the binding under
    /// `bindings:`, or fix the name; to write a literal brace, double it: `{{`.
    UnknownBinding {
        /// The placeholder's name.
        name: String,
        /// Character offset of the `{`.
        at: usize,
        /// The bindings that exist.
        known: Vec<String>,
        /// The closest known name, if any is close.
        suggestion: Option<String>,
    },
}

impl TemplateError {
    /// Character offset in the template where the problem starts.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("a", "Identity()")]).unwrap();
    /// let err = paceline::Template::compile("x {b}", &set).unwrap_err();
    /// assert_eq!(err[0].offset(), 2);
    /// ```
    pub fn offset(&self) -> usize {
        match self {
            Self::UnknownBinding { at, .. } => *at,
        }
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownBinding {
                name,
                known,
                suggestion,
                ..
            } => {
                write!(f, "unknown binding `{{{name}}}`; ")?;
                if let Some(s) = suggestion {
                    write!(f, "did you mean `{s}`? ")?;
                }
                write!(
                    f,
                    "known bindings: {} (define it under `bindings:`, or write `{{{{` for a \
                     literal brace; NB5 cannot run such an op either: \"No binding spec was \
                     provided for bind point\")",
                    crate::activity::suggest::list(known.iter().map(String::as_str))
                )
            }
        }
    }
}

impl Error for TemplateError {}
