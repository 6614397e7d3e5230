//! "Did you mean …?": the closest known word by edit distance.

/// Edit distance between `a` and `b` (optimal string alignment: insertions,
/// deletions, substitutions and swaps of neighbours), by characters,
/// case-insensitive.
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i * w + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut v = (d[(i - 1) * w + j] + 1)
                    .min(d[i * w + j - 1] + 1)
                    .min(d[(i - 1) * w + j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    v = v.min(d[(i - 2) * w + j - 2] + 1);
                }
                v
            };
        }
    }
    d[a.len() * w + b.len()]
}

/// The known word closest to `word`, if it is close enough to be a likely typo:
/// at most a third of its length away (and at least 1 edit allowed), or equal
/// ignoring case. The did-you-mean of every message.
///
/// ```
/// assert_eq!(paceline::closest_name("quikstart", ["quickstart", "ramp"]), Some("quickstart"));
/// assert_eq!(paceline::closest_name("banana", ["quickstart", "ramp"]), None);
/// ```
pub fn closest<'a, I>(word: &str, known: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let limit = (word.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|k| (distance(word, k), k))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// The known word closest to `word`, however far (`None` only when `known` is
/// empty): for lists long enough that any near name helps.
pub(crate) fn nearest<'a, I>(word: &str, known: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    known.into_iter().min_by_key(|k| distance(word, k))
}

/// "; did you mean `x`?" or "", for appending to a message.
pub(crate) fn did_you_mean<'a, I>(word: &str, known: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    closest(word, known).map(|k| format!("did you mean `{k}`?"))
}

/// `a`, `b`, `c` as a backquoted, comma-separated list (or "none").
pub(crate) fn list<'a, I>(items: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    let v: Vec<String> = items.into_iter().map(|s| format!("`{s}`")).collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("thread", "threads"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("Hash", "hash"), 0);
        assert_eq!(distance("Mdo", "Mod"), 1);
    }

    #[test]
    fn suggestions() {
        let known = ["threads", "cycles", "rate", "stride"];
        assert_eq!(closest("thread", known), Some("threads"));
        assert_eq!(closest("cylces", known), Some("cycles"));
        assert_eq!(closest("banana", known), None);
        assert_eq!(list(["a", "b"]), "`a`, `b`");
        assert_eq!(list([]), "none");
    }
}
