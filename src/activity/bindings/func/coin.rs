//! NB5's `CoinFunc(threshold, first, second)` (`from_long/to_object/CoinFunc.java`):
//! an unfair coin per input, `HashRange(0.0, 1.0)` of the input (paceline's
//! hash), picks the first function below `threshold` and the second otherwise;
//! both take the input itself.

use super::compile::Ctx;
use super::{Chain, Func};
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::hash::{mix64, unit};
use crate::activity::bindings::parse::Arg;
use crate::activity::bindings::value::{Kind, Value};

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &["CoinFunc"];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    (name == "CoinFunc").then_some(
        "`CoinFunc(0.15, NumberNameToString(), Combinations('A-Z'))`: the first function for \
         that share of the inputs, the second for the rest",
    )
}

/// A compiled `CoinFunc`.
#[derive(Debug, Clone)]
pub(crate) struct Coin {
    threshold: f64,
    first: Chain,
    second: Chain,
    /// The two give different kinds: both as text (NB5's `Object`, printed).
    text: bool,
}

impl Coin {
    /// The coin: the float `HashRange(0.0, 1.0)` gives the input (`Func::Uniform`).
    pub(crate) fn apply(&self, v: Value) -> Value {
        let coin = unit(mix64(v.as_u64()));
        let out = if coin < self.threshold {
            self.first.eval(v)
        } else {
            self.second.eval(v)
        };
        if self.text {
            Value::Str(out.into_string())
        } else {
            out
        }
    }
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| {
        cx.arity(3, 3)?;
        cx.int_input(input)?;
        let threshold = cx.num(0)?;
        let chain = |i: usize| match &cx.call.args[i] {
            Arg::Chain(calls, _) => super::compile(cx.binding, calls, input),
            other => Err(cx.wrong(i, other, "a function, as NB5's `FixedValue(0)`")),
        };
        let (first, second) = (chain(1)?, chain(2)?);
        let text = first.out() != second.out();
        let out = if text { Kind::Str } else { first.out() };
        let coin = Coin {
            threshold,
            first,
            second,
            text,
        };
        Ok((Func::Coin(Box::new(coin)), out))
    })
}
