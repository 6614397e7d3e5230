//! The context a function compiles in ([`Ctx`]): its binding, its call and
//! the argument readers and messages every compiler shares, and how each
//! function is called ([`usage`]), for those messages.

use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::parse::{Arg, Call};
use crate::activity::bindings::value::Kind;

/// How each function is called, for messages.
pub(crate) fn usage(name: &str) -> &'static str {
    match name {
        "Identity" => "`Identity()`",
        "Hash" => "`Hash()` or `Hash(seed)` with an integer seed",
        "Mod" => "`Mod(n)` with an integer n > 0",
        "Add" => "`Add(n)` with an integer n",
        "Mul" => "`Mul(n)` with an integer n >= 0",
        "Div" => "`Div(n)` with an integer n > 0",
        "Range" => "`Range(min, max)` or `Range(max)` with integers min < max (max excluded)",
        "Uniform" => "`Uniform(min, max)` with numbers min < max",
        "Normal" => "`Normal(mean, stddev)` with stddev > 0",
        "Zipf" => "`Zipf(n, exponent)` with an integer n >= 1 and exponent > 0",
        "Chance" => "`Chance(p)` with 0 <= p <= 1",
        "WeightedChoice" => "`WeightedChoice('a:3,b:1,c')` (weight 1 when left out)",
        "Choice" => "`Choice('a', 'b', 'c')` with at least one string",
        "Uuid" => "`Uuid()`",
        "AlphaNum" => "`AlphaNum(length)` with a length from 0 to 65536",
        "Template" => "`Template('user-{}-{}', Mod(100), Hash())`: one chain per `{}`, or none",
        "ToString" => "`ToString()`",
        "ToFloat" => "`ToFloat()`",
        "ToInt" => "`ToInt()`",
        "Round" => "`Round(digits)` with 0 <= digits <= 15",
        "Prefix" => "`Prefix('text')`",
        "Suffix" => "`Suffix('text')`",
        "HashRange" => {
            "`HashRange(max)` or `HashRange(min, max)` with integers, min <= max (max included)"
        }
        "NumberNameToString" => "`NumberNameToString()`",
        "Combinations" => {
            "`Combinations('A-Z;0-9')`: one set of characters per position, separated by `;`"
        }
        "WeightedStrings" => "`WeightedStrings('a:3;b:1;c')` (weight 1 when left out)",
        "WeightedLongs" => "`WeightedLongs('1:3;5:1;9')` (weight 1 when left out)",
        "Stringify" => "`Stringify()`: the value as text, a list as `[a, b]`",
        "Show" => super::show::USAGE,
        "Levy" => "`Levy(mu, c)` with a scale c > 0",
        "TypeOf" => "`TypeOf()`: the Java class NB5 gives the value",
        "FixedValues" => "`FixedValues(1, 5, 9)` or `FixedValues('a', 'b')`: literals of one type",
        "ToUUID" => "`ToUUID()`",
        "Clamp" => "`Clamp(min, max)` with min <= max",
        "Min" => "`Min(n)`",
        "Max" => "`Max(n)`",
        "Discard" => "`Discard()`",
        "Token" => "`Token('TOKEN', 'AUTH_URI', 'UID', 'PASSWORD')` with the token given",
        other => super::extra::usage(other)
            .or_else(|| super::time::usage(other))
            .or_else(|| super::coll::usage(other))
            .or_else(|| super::xvec::usage(other))
            .or_else(|| super::names::usage(other))
            .or_else(|| super::text::usage(other))
            .or_else(|| super::csv::usage(other))
            .or_else(|| super::decimal::usage(other))
            .or_else(|| super::coin::usage(other))
            .unwrap_or("`Constant('text')` or `Constant(42)`"),
    }
}

pub(crate) struct Ctx<'a> {
    pub(crate) binding: &'a str,
    pub(crate) call: &'a Call,
    /// The function's name here (an NB5 alias resolved).
    pub(crate) name: &'a str,
}

impl Ctx<'_> {
    pub(crate) fn bad(&self, at: usize, what: impl Into<String>) -> BindingError {
        BindingError::BadArguments {
            binding: self.binding.to_string(),
            at,
            function: self.call.name.clone(),
            what: what.into(),
            usage: usage(self.name),
        }
    }

    /// The function takes an integer and the chain gives it `input`: an error
    /// naming both unless `input` is an integer.
    pub(crate) fn int_input(&self, input: Kind) -> Result<(), BindingError> {
        if input.is_int() {
            return Ok(());
        }
        Err(BindingError::TypeMismatch {
            binding: self.binding.to_string(),
            at: self.call.at,
            function: self.name.to_string(),
            takes: "an integer",
            gets: input,
        })
    }

    pub(crate) fn arity(&self, min: usize, max: usize) -> Result<(), BindingError> {
        let n = self.call.args.len();
        if n < min || n > max {
            let want = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(self.bad(self.call.at, format!("takes {want} argument(s), not {n}")));
        }
        Ok(())
    }

    /// Argument `i`, `other`, is not the kind the function needs.
    pub(crate) fn wrong(&self, i: usize, other: &Arg, needs: &str) -> BindingError {
        self.bad(
            other.at(),
            format!(
                "needs {needs} for argument {}, not {}",
                i + 1,
                other.describe()
            ),
        )
    }

    pub(crate) fn int(&self, i: usize) -> Result<i128, BindingError> {
        match &self.call.args[i] {
            Arg::Int(v, _) => Ok(*v),
            other => Err(self.wrong(i, other, "an integer")),
        }
    }

    pub(crate) fn num(&self, i: usize) -> Result<f64, BindingError> {
        match &self.call.args[i] {
            Arg::Int(v, _) => Ok(*v as f64),
            Arg::Float(v, _) => Ok(*v),
            other => Err(self.wrong(i, other, "a number")),
        }
    }

    pub(crate) fn string(&self, i: usize) -> Result<String, BindingError> {
        match &self.call.args[i] {
            Arg::Str(s, _) => Ok(s.clone()),
            other => Err(self.wrong(i, other, "a quoted string")),
        }
    }

    pub(crate) fn at(&self, i: usize) -> usize {
        self.call.args[i].at()
    }
}
