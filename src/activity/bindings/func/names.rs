//! NB5's premade name and place functions over bundled public-domain lists:
//! `FirstNames`, `LastNames`, `FullNames`, `CountryCodes`, `CountryNames`,
//! `Cities`, `Counties`, `StateNames`, `StateCodes`. `data/README.md` names
//! each file's source.
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
//! - `data/country_names.txt`: the distinct `COUNTRY_NAME`s of the same file,
//!   equal weights, as NB5's `CountryNames`.
//! - `data/cities.txt`: the distinct place names of the US Census Bureau's 2016
//!   Gazetteer of places (NB5's `data/census_places.csv`, public domain), each
//!   without its legal description (`Abbeville city` is `Abbeville`, `Abanda
//!   CDP` is `Abanda`), equal weights. NB5's `Cities` samples the `city` column
//!   of simplemaps' `uszips.csv` with equal weights: that file is not in NB5's
//!   repository at the corpus commit (its blob is not stored) and asks for a
//!   backlink, so the names here are the census places: most are the same
//!   towns, but the two sets are not equal. NB5's `Counties` samples that same
//!   `city` column (its source passes `"city"`, not a county column): here too
//!   it draws a city, as NB5 does.
//! - `data/state_names.txt`: the names of the 52 USPS codes of NB5's
//!   `data/census_state_abbrev.csv` (the 50 states, DC and Puerto Rico), equal
//!   weights; `StateCodes` draws the codes. NB5 samples `state_name` and
//!   `state_id` of `uszips.csv`, which may name more territories.
//!
//! Each draw is a hashed weighted pick, as NB5's (with paceline's hash).

use super::compile::Ctx;
use super::{Chain, Func};
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::value::Kind;
use std::sync::OnceLock;

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &[
    "FirstNames",
    "LastNames",
    "FullNames",
    "CountryCodes",
    "CountryNames",
    "Cities",
    "Counties",
    "StateNames",
    "StateCodes",
];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "FirstNames" => "`FirstNames()`: a US census first name, by its frequency",
        "LastNames" => "`LastNames()`: a US census surname, by its frequency",
        "FullNames" => {
            "`FullNames()`: `FirstNames()` of the input, a space, `LastNames()` of input + 1"
        }
        "CountryCodes" => "`CountryCodes()`: an ISO 3166-1 country code",
        "CountryNames" => "`CountryNames()`: a country's name",
        "Cities" => "`Cities()`: a US city name (the census places)",
        "Counties" => "`Counties()`: as NB5's, a US city name (NB5 samples the city column)",
        "StateNames" => "`StateNames()`: a US state's name (50 states, DC, Puerto Rico)",
        "StateCodes" => "`StateCodes()`: a US state's USPS code (50 states, DC, Puerto Rico)",
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

/// One name a line, each of weight 1 (names may hold spaces: `New York`).
fn load_lines(text: &str) -> List {
    let items: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let cumulative = (1..=items.len()).map(|i| i as f64).collect();
    (items, cumulative)
}

fn country_names() -> &'static List {
    static L: OnceLock<List> = OnceLock::new();
    L.get_or_init(|| load_lines(include_str!("../data/country_names.txt")))
}

fn cities() -> &'static List {
    static L: OnceLock<List> = OnceLock::new();
    L.get_or_init(|| load_lines(include_str!("../data/cities.txt")))
}

/// The 52 USPS codes of NB5's `census_state_abbrev.csv`, in its order, with
/// the line of `data/state_names.txt` that names each.
const STATE_CODES: [&str; 52] = [
    "AK", "AL", "AR", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "HI", "IA", "ID", "IL", "IN",
    "KS", "KY", "LA", "MA", "MD", "ME", "MI", "MN", "MO", "MS", "MT", "NC", "ND", "NE", "NH", "NJ",
    "NM", "NV", "NY", "OH", "OK", "OR", "PA", "PR", "RI", "SC", "SD", "TN", "TX", "UT", "VA", "VT",
    "WA", "WI", "WV", "WY",
];

fn state_names() -> &'static List {
    static L: OnceLock<List> = OnceLock::new();
    L.get_or_init(|| load_lines(include_str!("../data/state_names.txt")))
}

fn state_codes() -> &'static List {
    static L: OnceLock<List> = OnceLock::new();
    L.get_or_init(|| load_lines(&STATE_CODES.join("\n")))
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
        cx.int_input(input)?;
        let f = match cx.name {
            "FirstNames" => choice(first()),
            "LastNames" => choice(last()),
            "CountryCodes" => choice(countries()),
            "CountryNames" => choice(country_names()),
            "Cities" | "Counties" => choice(cities()),
            "StateNames" => choice(state_names()),
            "StateCodes" => choice(state_codes()),
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

    /// `Cities` follows NB5's `Cities` (`CSVSampler("city", "n/a", "name",
    /// "data/simplemaps/uszips.csv")`: distinct names, equal weights) over the
    /// census places of NB5's `data/census_places.csv`, their legal
    /// descriptions dropped; `Counties` is NB5's copy of it (column `city`).
    #[test]
    fn cities_are_the_census_places_without_their_descriptions() {
        let (c, w) = cities();
        assert_eq!(c.len(), 19577, "distinct names of the 29,575 places");
        assert_eq!((&c[0][..], &c[1][..]), ("Abanda", "Abbeville"));
        for name in [
            "Los Angeles",
            "New York",
            "Juneau",
            "Nashville-Davidson",
            "Bayamón",
        ] {
            assert!(c.iter().any(|x| x == name), "{name}");
        }
        for suffix in [
            " city",
            " CDP",
            " town",
            " village",
            " borough",
            " zona urbana",
        ] {
            assert!(!c.iter().any(|x| x.ends_with(suffix)), "{suffix}");
        }
        let mut sorted = c.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            c.len(),
            "each name once, as NB5's `name` mode"
        );
        assert_eq!(w[w.len() - 1], c.len() as f64, "equal weights");
    }

    /// `StateNames`/`StateCodes`: the 52 of NB5's `census_state_abbrev.csv`, the
    /// name on the line of its code; `CountryNames`: the 241 `COUNTRY_NAME`s of
    /// NB5's `data/countries.csv`, line for line with `CountryCodes`.
    #[test]
    fn states_and_countries_are_nb5s_lists() {
        let (names, _) = state_names();
        let (codes, w) = state_codes();
        assert_eq!((names.len(), codes.len(), w[51]), (52, 52, 52.0));
        let of = |code: &str| &names[codes.iter().position(|c| c == code).unwrap()][..];
        assert_eq!(
            (of("CA"), of("DC"), of("PR"), of("WY")),
            (
                "California",
                "District of Columbia",
                "Puerto Rico",
                "Wyoming"
            )
        );
        let (cn, _) = country_names();
        let (cc, _) = countries();
        assert_eq!((cn.len(), cc.len()), (241, 241));
        let of = |code: &str| &cn[cc.iter().position(|c| c == code).unwrap()][..];
        assert_eq!((of("AF"), of("US")), ("Afghanistan", "United States"));
        assert!(
            cn.iter().any(|n| n == "American Samoa"),
            "names with spaces"
        );
    }
}
