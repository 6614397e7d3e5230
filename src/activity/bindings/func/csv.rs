//! NB5's `CSVFrequencySampler` (virtdata `distributions/CSVFrequencySampler.java`):
//! the distinct values of one column of a CSV file, each drawn as often as
//! it occurs there, numbered in the order NB5's `HashSet` gives them
//! (`java.rs`).

use super::Func;
use super::compile::Ctx;
use super::java::{java_hash_order, java_string_hash};
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
    cx.int_input(input)?;
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
    let hashes: Vec<i32> = values.iter().map(|v| java_string_hash(v)).collect();
    let order = java_hash_order(&hashes, None);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_count_as_commons_csv_reads_them() {
        let text = "name,n\nalpha,1\n\"del,ta\",2\nalpha,3\r\n\n\"say \"\"hi\"\"\",4\n";
        let (values, counts) = frequencies(text, "name").unwrap();
        assert_eq!(values, vec!["alpha", "del,ta", "say \"hi\""]);
        assert_eq!(counts, vec![2, 1, 1]);
        assert!(frequencies(text, "nope").unwrap_err().contains("`nope`"));
    }
}
