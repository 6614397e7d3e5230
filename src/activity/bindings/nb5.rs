//! NoSQLBench's binding functions: the names that are another function here,
//! the ones paceline does not have (each with what to write instead), and the
//! helpers of the NB5 functions implemented here. `docs/nb5.md` lists them all.

/// NoSQLBench names that are another name here (`docs/nb5.md`), as (NB5, paceline).
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("AlphaNumericString", "AlphaNum"),
    ("ToHashedUUID", "Uuid"),
    ("FixedValue", "Constant"),
    ("ToLong", "ToInt"),
    ("ToDouble", "ToFloat"),
    ("DirectIdentity", "Identity"),
    ("DivideToLong", "Div"),
    ("ModuloToLong", "Mod"),
    ("CycleRange", "Range"),
];

/// NB5's `*ByPopulation` place functions weight each value by the `population`
/// column of simplemaps' `uszips.csv`; the census lists bundled for `Cities` and
/// `StateNames` have no population.
const BY_POPULATION: &str = "NB5 weights each value by the `population` column of simplemaps' \
     `uszips.csv`, which NB5's repository does not carry at the commit paceline follows (the \
     census places bundled for `Cities` have no population): use `Cities()`, `StateNames()` or \
     `StateCodes()` (equal weights), or `WeightedStrings('CA:39;TX:29;...')` with weights of \
     your own";

/// NoSQLBench functions paceline does not have, each with what to write instead.
pub(crate) const UNSUPPORTED: &[(&str, &str)] = &[
    ("Expr", "write the arithmetic as a chain: `Mul(3); Add(1)`"),
    (
        "Load",
        "bindings are pure functions of the cycle here: recompute the value with the same chain",
    ),
    ("LoadLong", "recompute the value with the same chain"),
    ("CitiesByPopulation", BY_POPULATION),
    ("CountiesByPopulation", BY_POPULATION),
    ("StateNamesByPopulation", BY_POPULATION),
    ("StateCodesByPopulation", BY_POPULATION),
    ("ZipCodesByPopulation", BY_POPULATION),
    ("TimeZonesByPopulation", BY_POPULATION),
    ("TimeZonesByDensity", BY_POPULATION),
    (
        "TimeZones",
        "NB5 draws the `timezone` column of simplemaps' `uszips.csv`, which NB5's repository does \
         not carry at the commit paceline follows: use `Choice('America/New_York', \
         'America/Chicago', 'America/Denver', 'America/Los_Angeles')`",
    ),
    (
        "ZipCodes",
        "NB5 draws the `zip` column of simplemaps' `uszips.csv`, which NB5's repository does not \
         carry at the commit paceline follows and whose license asks its users for a backlink; no \
         public-domain ZIP list is bundled: use `HashedLineToString('zips.txt')` over a file of \
         ZIP codes (the Census Bureau's ZCTA list is public domain)",
    ),
    (
        "CurrentEpochMillis",
        "wall-clock values would not be deterministic: use `Add(1700000000000)`",
    ),
    (
        "MapSized",
        "collections are not supported: build JSON text with `Template`",
    ),
    ("ToByteBuffer", "byte buffers are a CQL type: render text"),
    (
        "CSVSampler",
        "reading CSV files is not supported: use `WeightedChoice('a:3,b:1')`",
    ),
    (
        "WeightedStringsFromCSV",
        "reading CSV files is not supported: use `WeightedStrings('a:3;b:1')`",
    ),
    (
        "Shuffle",
        "use `Hash(); Mod(n)` for a spread over 0..n (not a permutation)",
    ),
    (
        "Interpolate",
        "use `Uniform(min, max)` or `Normal(mean, stddev)`",
    ),
    ("Exponential", "use `Uniform`, `Normal` or `Zipf`"),
    ("Poisson", "use `Uniform`, `Normal` or `Zipf`"),
    ("Binomial", "use `Chance(p)` or `Uniform`"),
    (
        "ToJSON",
        "build JSON text with `Template`, or use a map in the op: it renders as JSON",
    ),
    ("JoinTemplate", "use `Template('{}-{}', chain, chain)`"),
    ("Unset", "leave the field out of the op"),
    (
        "ToCqlDurationNanos",
        "CQL types are not supported: render numbers",
    ),
];

/// `x` in English words: `1234` is "one thousand two hundred thirty four".
pub(crate) fn number_name(x: u64) -> String {
    const ONES: [&str; 20] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 10] = [
        "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    const SCALES: [&str; 7] = [
        "",
        "thousand",
        "million",
        "billion",
        "trillion",
        "quadrillion",
        "quintillion",
    ];
    fn below_1000(n: u64, words: &mut Vec<&'static str>) {
        if n >= 100 {
            words.push(ONES[(n / 100) as usize]);
            words.push("hundred");
        }
        let rest = n % 100;
        if rest >= 20 {
            words.push(TENS[(rest / 10) as usize]);
            if rest % 10 != 0 {
                words.push(ONES[(rest % 10) as usize]);
            }
        } else if rest > 0 || n == 0 {
            words.push(ONES[rest as usize]);
        }
    }
    if x == 0 {
        return "zero".to_string();
    }
    let mut groups = Vec::new();
    let mut n = x;
    while n > 0 {
        groups.push(n % 1000);
        n /= 1000;
    }
    let mut words = Vec::new();
    for (i, &g) in groups.iter().enumerate().rev() {
        if g == 0 {
            continue;
        }
        below_1000(g, &mut words);
        if i > 0 {
            words.push(SCALES[i]);
        }
    }
    words.join(" ")
}

/// The character sets of a `Combinations` spec: `A-Z;0-9` is two positions.
pub(crate) fn char_sets(spec: &str) -> Result<Vec<Vec<char>>, String> {
    let mut sets = Vec::new();
    for part in spec.split(';') {
        let chars: Vec<char> = part.chars().collect();
        let mut set = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if i + 2 < chars.len() && chars[i + 1] == '-' {
                let (a, b) = (chars[i], chars[i + 2]);
                if a > b {
                    return Err(format!("has the range `{a}-{b}` backwards"));
                }
                set.extend(a..=b);
                i += 3;
            } else {
                set.push(chars[i]);
                i += 1;
            }
        }
        if set.is_empty() {
            return Err(format!("has an empty position in `{spec}`"));
        }
        sets.push(set);
    }
    Ok(sets)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn docs_nb5_lists_every_mapped_and_unsupported_function() {
        let doc = include_str!("../../../docs/nb5.md");
        for name in ALIASES
            .iter()
            .map(|(n, _)| *n)
            .chain(UNSUPPORTED.iter().map(|(n, _)| *n))
            .chain([
                "HashRange",
                "NumberNameToString",
                "Combinations",
                "WeightedStrings",
            ])
        {
            assert!(
                doc.contains(&format!("| `{name}`")),
                "{name} is not in docs/nb5.md"
            );
        }
    }

    #[test]
    fn number_names() {
        assert_eq!(number_name(0), "zero");
        assert_eq!(number_name(19), "nineteen");
        assert_eq!(number_name(105), "one hundred five");
        assert_eq!(number_name(2_000_040), "two million forty");
    }
}
