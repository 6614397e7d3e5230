//! NB5's `CSVFrequencySampler` (virtdata `distributions/CSVFrequencySampler.java`):
//! the distinct values of one column of a CSV file, each drawn as often as
//! it occurs there. With it, what reproduces Java's collections: the order in
//! which a `java.util.HashSet<String>` iterates ([`hash_set_order`]), which is
//! the order NB5 numbers the values in.

use super::Func;
use super::compile::Ctx;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::value::{Kind, Value};

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &["CSVFrequencySampler"];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "CSVFrequencySampler" => {
            "`CSVFrequencySampler('FILE.csv', 'column')`: a value of the column, drawn by how \
             often it occurs"
        }
        _ => return None,
    })
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| compile_known(cx, input))
}

fn compile_known(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    if !input.is_int() {
        return Err(BindingError::TypeMismatch {
            binding: cx.binding.to_string(),
            at: cx.call.at,
            function: cx.name.to_string(),
            takes: "an integer",
            gets: input,
        });
    }
    cx.arity(2, 2)?;
    let mut file = cx.string(0)?;
    let column = cx.string(1)?;
    // NB5 adds the extension when the name lacks it.
    if !file.ends_with(".csv") {
        file.push_str(".csv");
    }
    let text = super::extra::read_file(cx, &file)?;
    let (values, counts) = frequencies(&text, &column).map_err(|why| cx.bad(cx.at(0), why))?;
    if values.is_empty() {
        return Err(cx.bad(
            cx.at(1),
            format!("finds no value in column `{column}` of `{file}`"),
        ));
    }
    // NB5 numbers the values in its HashSet's order and weighs each by its count.
    let order = hash_set_order(&values);
    let mut total = 0.0;
    let mut items = Vec::with_capacity(order.len());
    let mut cumulative = Vec::with_capacity(order.len());
    for i in order {
        total += counts[i] as f64;
        items.push(Value::Str(values[i].clone()));
        cumulative.push(total);
    }
    Ok((Func::Choice { items, cumulative }, Kind::Str))
}

/// The distinct values of `column` in the order they first occur, and how
/// often each occurs. The first record is the header (commons-csv's
/// `DEFAULT.withFirstRecordAsHeader()`).
fn frequencies(text: &str, column: &str) -> Result<(Vec<String>, Vec<u64>), String> {
    let mut records = records(text)?.into_iter();
    let header = records.next().unwrap_or_default();
    let at = header
        .iter()
        .position(|h| h == column)
        .ok_or_else(|| format!("names the column `{column}`, which the header {header:?} lacks"))?;
    let mut values: Vec<String> = Vec::new();
    let mut counts: Vec<u64> = Vec::new();
    for rec in records {
        let Some(v) = rec.get(at) else { continue };
        match values.iter().position(|x| x == v) {
            Some(i) => counts[i] += 1,
            None => {
                values.push(v.clone());
                counts.push(1);
            }
        }
    }
    Ok((values, counts))
}

/// RFC 4180 records as commons-csv's `DEFAULT` format reads them: fields
/// separated by `,`, a field in `"` may hold `,`, line breaks and `""` (one
/// `"`); blank lines are skipped.
fn records(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut out = Vec::new();
    let mut rec: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut line = 1;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            '"' if quoted => quoted = false,
            '"' if field.is_empty() => quoted = true,
            ',' if !quoted => rec.push(std::mem::take(&mut field)),
            '\r' if !quoted => {}
            '\n' if !quoted => {
                line += 1;
                if !(rec.is_empty() && field.is_empty()) {
                    rec.push(std::mem::take(&mut field));
                    out.push(std::mem::take(&mut rec));
                }
            }
            c => {
                if c == '\n' {
                    line += 1;
                }
                field.push(c);
            }
        }
    }
    if quoted {
        return Err(format!(
            "reads a CSV file whose quote opened before line {line} never closes"
        ));
    }
    if !(rec.is_empty() && field.is_empty()) {
        rec.push(field);
        out.push(rec);
    }
    Ok(out)
}

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over the
/// UTF-16 code units, in 32-bit wrapping arithmetic.
pub(crate) fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// The order in which a `java.util.HashSet` (a `HashMap`: 16 buckets, load
/// factor 0.75, doubled when the count passes three quarters) iterates
/// elements added in the order given, whose `hashCode()`s are `hashes`:
/// by bucket, `(h ^ h >>> 16) & (buckets - 1)`, and within a bucket in the
/// order added (a resize keeps that order). Indices into `hashes`.
/// Not reproduced: a bucket of more than 8 elements in a table of 64 or more
/// becomes a tree in Java, whose order differs.
pub(crate) fn java_hash_order(hashes: &[i32]) -> Vec<usize> {
    let mut buckets = 16usize;
    while hashes.len() * 4 > buckets * 3 {
        buckets *= 2;
    }
    let bucket = |h: i32| ((h ^ ((h as u32) >> 16) as i32) as u32 as usize) & (buckets - 1);
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    // A stable sort: within a bucket, the order added.
    order.sort_by_key(|&i| bucket(hashes[i]));
    order
}

/// [`java_hash_order`] of distinct strings.
pub(crate) fn hash_set_order(values: &[String]) -> Vec<usize> {
    let hashes: Vec<i32> = values.iter().map(|s| java_string_hash(s)).collect();
    java_hash_order(&hashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Java: `"alpha".hashCode()` is 92909918, `"".hashCode()` 0, `"Aa"` and
    /// `"BB"` collide at 2112; a non-ASCII character counts as its UTF-16 unit.
    #[test]
    fn string_hashes_are_java_s() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("alpha"), 92_909_918);
        assert_eq!(java_string_hash("Aa"), 2112);
        assert_eq!(java_string_hash("BB"), 2112);
        assert_eq!(java_string_hash("é"), 0xe9);
        // Wraps as Java's int: "hello world".hashCode() == 1794106052.
        assert_eq!(java_string_hash("hello world"), 1_794_106_052);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    }

    /// `new HashSet<>(List.of(...))`-style adds, iterated as Java iterates
    /// them (worked by hand from `HashMap.hash` and the table size).
    #[test]
    fn hash_set_iterates_in_java_s_order() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // "b" 98 -> bucket 2, "a" 97 -> 1, "c" 99 -> 3: Java prints [a, b, c].
        assert_eq!(hash_set_order(&v(&["b", "a", "c"])), vec![1, 0, 2]);
        // "q" 113 & 15 = 1 shares bucket 1 with "a": added after it, after it.
        assert_eq!(hash_set_order(&v(&["q", "b", "a"])), vec![0, 2, 1]);
        // "alpha" 92909918 (0x589B15E): h ^ h >>> 16 = 0x589B4D7, & 15 = 7;
        // "delta" 95468472 (0x5B0BBB8): 0x5B0BE08, & 15 = 8: [alpha, delta].
        assert_eq!(hash_set_order(&v(&["delta", "alpha"])), vec![1, 0]);
        // 13 elements: 32 buckets (12 fit in 16). 16 & 31 = 16 and 1 & 31 = 1.
        let hashes: Vec<i32> = (0..13).map(|i| if i == 0 { 16 } else { i }).collect();
        assert_eq!(java_hash_order(&hashes)[..2], [1, 2]);
        assert_eq!(java_hash_order(&hashes)[12], 0);
    }

    #[test]
    fn csv_columns_count_as_commons_csv_reads_them() {
        let text = "name,n\nalpha,1\n\"del,ta\",2\nalpha,3\r\n\n\"say \"\"hi\"\"\",4\n";
        let (values, counts) = frequencies(text, "name").unwrap();
        assert_eq!(values, vec!["alpha", "del,ta", "say \"hi\""]);
        assert_eq!(counts, vec![2, 1, 1]);
        assert!(frequencies(text, "nope").unwrap_err().contains("`nope`"));
    }
}
