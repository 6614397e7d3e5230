//! NB5's premade name and place functions over bundled public-domain lists:
//! `FirstNames`, `LastNames`, `FullNames`, `CountryCodes`.
//!
//! - `data/first_names.txt`: the US Census Bureau's 1990 first names
//!   (`dist.female.first`, then `dist.male.first`: the two files NB5's
//!   `FirstNames` reads, the same names and weights), `Name weight`, the weight
//!   the census percentage in thousandths.
//! - `data/last_names.txt`: the 1990 census surnames (`dist.all.last`), every
//!   name with a weight above 0 (18,839; the 70,000 rarer ones have weight 0.000
//!   there and are never drawn). NB5's `LastNames` reads the 2010 census list
//!   (`surnames.csv`, weights `prop100k`), which its repository does not carry
//!   at the corpus commit: the draw here follows 1990's frequencies.
//! - `data/country_codes.txt`: the distinct `COUNTRY_CODE`s of NB5's
//!   `data/countries.csv` (ISO 3166-1 alpha-2), drawn with equal weights, as
//!   NB5's `CSVSampler` in its `name` mode.
//!
//! Each draw is a hashed weighted pick, as NB5's (with paceline's hash).

use super::compile::Ctx;
use super::{Chain, Func};
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::value::Kind;
use std::sync::OnceLock;

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &["FirstNames", "LastNames", "FullNames", "CountryCodes"];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "FirstNames" => "`FirstNames()`: a US census first name, by its frequency",
        "LastNames" => "`LastNames()`: a US census surname, by its frequency",
        "FullNames" => {
            "`FullNames()`: `FirstNames()` of the input, a space, `LastNames()` of input + 1"
        }
        "CountryCodes" => "`CountryCodes()`: an ISO 3166-1 country code",
        _ => return None,
    })
}

type List = (Vec<String>, Vec<f64>);

/// `Name weight` lines (or bare names, weight 1) as items and cumulative weights.
fn load(text: &str) -> List {
    let mut items = Vec::new();
    let mut cumulative = Vec::new();
    let mut total = 0.0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (name, w) = match line.rsplit_once(' ') {
            Some((n, w)) => (n, w.parse::<f64>().unwrap_or(0.0)),
            None => (line, 1.0),
        };
        total += w;
        items.push(name.to_string());
        cumulative.push(total);
    }
    (items, cumulative)
}

fn first() -> &'static List {
    static L: OnceLock<List> = OnceLock::new();
    L.get_or_init(|| load(include_str!("../data/first_names.txt")))
}

fn last() -> &'static List {
    static L: OnceLock<List> = OnceLock::new();
    L.get_or_init(|| load(include_str!("../data/last_names.txt")))
}

fn countries() -> &'static List {
    static L: OnceLock<List> = OnceLock::new();
    L.get_or_init(|| load(include_str!("../data/country_codes.txt")))
}

fn choice(list: &List) -> Func {
    Func::Choice {
        items: list
            .0
            .iter()
            .cloned()
            .map(crate::activity::bindings::value::Value::Str)
            .collect(),
        cumulative: list.1.clone(),
    }
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| {
        cx.arity(0, 0)?;
        if !input.is_int() {
            return Err(BindingError::TypeMismatch {
                binding: cx.binding.to_string(),
                at: cx.call.at,
                function: cx.name.to_string(),
                takes: "an integer",
                gets: input,
            });
        }
        let f = match cx.name {
            "FirstNames" => choice(first()),
            "LastNames" => choice(last()),
            "CountryCodes" => choice(countries()),
            // NB5's `Template("{} {}", FirstNames(), LastNames())`: function i
            // of a template takes input + i.
            _ => Func::Template {
                parts: vec![String::new(), " ".into(), String::new()],
                args: vec![
                    Chain {
                        funcs: vec![choice(first())],
                        out: Kind::Str,
                    },
                    Chain {
                        funcs: vec![Func::Add(1), choice(last())],
                        out: Kind::Str,
                    },
                ],
            },
        };
        Ok((f, Kind::Str))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bundled lists are NB5's census lists: the first rows and the sizes.
    #[test]
    fn the_bundled_lists_are_the_census_lists() {
        let (f, fw) = first();
        assert_eq!((f.len(), &f[0][..], &f[4275][..]), (5494, "Mary", "James"));
        assert_eq!(fw[0], 2629.0, "Mary: 2.629 % of the 1990 census' women");
        let (l, _) = last();
        assert_eq!((l.len(), &l[0][..], &l[1][..]), (18839, "Smith", "Johnson"));
        let (c, cw) = countries();
        assert!(c.contains(&"US".to_string()) && c.contains(&"AF".to_string()));
        assert_eq!(cw[cw.len() - 1], c.len() as f64, "equal weights");
    }
}
