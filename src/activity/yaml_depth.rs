//! How deep a YAML text nests, found before it is parsed.
//!
//! The parser refuses more than 128 nested collections, but only after reading
//! the whole text, in time that grows with the square of the depth (20,000
//! levels took seconds), and with a message of its own. So a text whose
//! collections nest more than [`MAX_DEPTH`] deep is refused here first, at the
//! place of the collection that goes too deep.
//!
//! What is counted, line by line:
//! - **block collections**: a map or a list opens where its first entry starts
//!   (its column); a line less indented closes those deeper. A list written at
//!   its parent key's column (`key:` then `- x` below it) is a level of its own.
//!   On one line, each `- ` opens a list inside the entry before it, and a
//!   `key:` after a `- ` opens a map inside the entry;
//! - **flow collections**: each `[` and `{` outside quotes and comments opens
//!   one, closed by its `]` or `}`, across lines;
//! - **not counted**: the text of block scalars (`|`, `>`: the lines more
//!   indented than their key), of quoted scalars (`'...'`, `"..."`, across
//!   lines) and of comments.
//!
//! The depth of a place is the block collections open there plus the flow
//! collections open there. For the YAML paceline reads this is the parser's
//! own count, but for a plain scalar continued on a more indented line, which
//! counts as one level more while it lasts; text the scan reads differently
//! (a `?` complex key, a quote that opens inside a plain scalar) is still
//! bounded by the parser's limit, which reports its own line and column.

/// The deepest nesting accepted, below the parser's limit of 128.
pub(crate) const MAX_DEPTH: usize = 100;

/// A block collection open at a column: a list, or a map.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Level {
    column: usize,
    list: bool,
}

/// The 1-based (line, column) of the first collection nested deeper than
/// [`MAX_DEPTH`]; `None` when the text nests no deeper.
pub(crate) fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut levels: Vec<Level> = Vec::new();
    let mut flow = 0usize;
    let mut quote: Option<char> = None;
    // A block scalar's key column: its text is the lines more indented.
    let mut scalar: Option<usize> = None;
    for (n, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let lineno = n + 1;
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        if let Some(key) = scalar {
            if rest.is_empty() || indent > key {
                continue;
            }
            scalar = None;
        }
        // Where the line's own text starts (after its structure).
        let mut start = 0;
        if quote.is_none() && flow == 0 {
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            if indent == 0 && (rest.starts_with("---") || rest.starts_with("...")) {
                levels.clear();
                continue;
            }
            let (at, deep) = block(&mut levels, indent, rest);
            if let Some(c) = deep {
                return Some((lineno, c + 1));
            }
            start = at;
            if opens_block_scalar(rest) {
                scalar = Some(levels.last().map_or(indent, |l| l.column));
            }
        }
        if let Some(c) = scan(line, start, &mut quote, &mut flow, levels.len()) {
            return Some((lineno, c));
        }
    }
    None
}

/// Updates the open block collections for a line indented `indent` whose text
/// is `rest`; returns the column where its content starts, and the column of
/// the first collection it opened past [`MAX_DEPTH`], if any.
fn block(levels: &mut Vec<Level>, indent: usize, rest: &str) -> (usize, Option<usize>) {
    while levels.last().is_some_and(|l| l.column > indent) {
        levels.pop();
    }
    let list = is_dash(rest);
    match levels.last().copied() {
        // A list at its parent key's column ends when the parent's next key comes.
        Some(l) if l.column == indent && l.list && !list => {
            levels.pop();
            if levels.last().is_none_or(|p| p.column != indent) {
                levels.push(Level {
                    column: indent,
                    list,
                });
            }
        }
        Some(l) if l.column == indent && (l.list || !list) => {}
        _ => levels.push(Level {
            column: indent,
            list,
        }),
    }
    let mut deep = (levels.len() > MAX_DEPTH).then_some(indent);
    // `- - key: v`: each dash an entry holding the next collection.
    let mut at = indent;
    let mut rest = rest;
    while is_dash(rest) {
        let after = &rest[1..];
        let skip = 1 + after.len() - after.trim_start_matches(' ').len();
        at += skip;
        rest = &rest[skip..];
        if rest.is_empty() || rest.starts_with('#') {
            break;
        }
        let list = is_dash(rest);
        if list || is_key(rest) {
            levels.push(Level { column: at, list });
            if levels.len() > MAX_DEPTH && deep.is_none() {
                deep = Some(at);
            }
        }
    }
    (at, deep)
}

/// `- ` (or a lone `-`) starts a list entry.
fn is_dash(s: &str) -> bool {
    s == "-" || s.starts_with("- ")
}

/// The text is a `key:` (a colon followed by a space or the end, before any
/// flow collection, quote or comment).
fn is_key(s: &str) -> bool {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'[' | b'{' | b'\'' | b'"' if i == 0 => return false,
            b'#' if i > 0 && b[i - 1] == b' ' => return false,
            b':' if b.get(i + 1).is_none_or(|n| *n == b' ') => return true,
            _ => {}
        }
    }
    false
}

/// The line's value is `|` or `>` (with its indicators), a block scalar whose
/// text is on the lines below.
fn opens_block_scalar(rest: &str) -> bool {
    let text = match rest.find(" #") {
        Some(i) => &rest[..i],
        None => rest,
    }
    .trim_end();
    let last = text.rsplit(' ').next().unwrap_or("");
    let before = &text[..text.len() - last.len()];
    (before.ends_with(": ") || before.ends_with("- ") || before.is_empty() && text.len() > 1)
        && last.starts_with(['|', '>'])
        && last[1..]
            .chars()
            .all(|c| matches!(c, '-' | '+' | '0'..='9'))
}

/// Scans a line's text from byte `start` for flow collections, quotes and a
/// comment; returns the 1-based column of a `[` or `{` that nests too deep.
fn scan(
    line: &str,
    start: usize,
    quote: &mut Option<char>,
    flow: &mut usize,
    block: usize,
) -> Option<usize> {
    let mut prev = ' ';
    let mut chars = line[start..].chars().peekable();
    let mut column = line[..start].chars().count();
    while let Some(c) = chars.next() {
        column += 1;
        match *quote {
            Some('\'') if c == '\'' => {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    column += 1;
                } else {
                    *quote = None;
                }
            }
            Some('"') if c == '\\' => {
                chars.next();
                column += 1;
            }
            Some('"') if c == '"' => *quote = None,
            Some(_) => {}
            None => {
                // A quote opens a scalar only where a scalar can start (not
                // inside a plain one: `Prefix('key:')`).
                let at_start = prev.is_whitespace() || matches!(prev, ',' | '[' | '{');
                match c {
                    '#' if prev.is_whitespace() => return None,
                    '\'' | '"' if at_start => *quote = Some(c),
                    '[' | '{' => {
                        *flow += 1;
                        if block + *flow > MAX_DEPTH {
                            return Some(column);
                        }
                    }
                    ']' | '}' => *flow = flow.saturating_sub(1),
                    _ => {}
                }
            }
        }
        prev = c;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25 (the fuzzer): 20,000 nested `{a: ` took the parser seconds to
    /// refuse; the nesting is refused before parsing, at the opener too deep.
    #[test]
    fn flow_nesting_past_the_limit_is_found_before_parsing() {
        // The map `a:` is one level, so the 100th `[` is the 101st level.
        let deep = format!("a: {}\n", "[".repeat(MAX_DEPTH + 5));
        assert_eq!(too_deep(&deep), Some((1, 3 + MAX_DEPTH)));
        let fine = format!("a: {}{}\n", "{b: ".repeat(99), "}".repeat(99));
        assert_eq!(too_deep(&fine), None);
        // Brackets in quotes and comments are text.
        let quoted: String = (0..300).map(|i| format!("o{i}: 'x [' # {{\n")).collect();
        assert_eq!(too_deep(&quoted), None);
        let dq: String = (0..300).map(|i| format!("o{i}: \"x \\\" {{\"\n")).collect();
        assert_eq!(too_deep(&dq), None);
        // A quote inside a plain scalar opens nothing (found by the fuzzer).
        let plain = format!("k: Prefix('key:')\nd: {}\n", "{a: ".repeat(MAX_DEPTH));
        assert!(too_deep(&plain).is_some());
    }

    /// Issue 25: block-style nesting was not bounded (the parser's own limit
    /// caught it, slowly, with its message); now it is, at the key too deep.
    #[test]
    fn block_nesting_past_the_limit_is_found_at_its_line_and_column() {
        let mut maps = String::new();
        for i in 0..MAX_DEPTH + 10 {
            maps.push_str(&format!("{}k{i}:\n", " ".repeat(i)));
        }
        // `k100` at column 101 of line 101 is the 101st map.
        assert_eq!(too_deep(&maps), Some((MAX_DEPTH + 1, MAX_DEPTH + 1)));
        let fine: String = (0..MAX_DEPTH)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert_eq!(too_deep(&fine), None);
        // Lists on one line: `b:` is the second level, each `- ` one more.
        let dashes = format!("a:\n  b:\n    {}x\n", "- ".repeat(MAX_DEPTH));
        assert_eq!(too_deep(&dashes), Some((3, 5 + 2 * (MAX_DEPTH - 2))));
        // Block and flow levels add up.
        let mixed = format!("a:\n  b: {}\n", "[".repeat(MAX_DEPTH - 1));
        assert_eq!(too_deep(&mixed), Some((2, 6 + MAX_DEPTH - 2)));
    }

    #[test]
    fn siblings_scalars_and_lists_at_their_keys_column_do_not_add_up() {
        // 300 sibling keys, each with a list at the key's column: depth 3.
        let lists: String = (0..300).map(|i| format!("k{i}:\n- a\n- b: 1\n")).collect();
        assert_eq!(too_deep(&lists), None);
        // A block scalar's text is not structure.
        let text = format!(
            "op: |\n{}\nnext: 1\n",
            (0..200)
                .map(|i| format!("{}- x: [", " ".repeat(2 + i)))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(too_deep(&text), None);
        // Each document starts again.
        let docs: String = (0..3)
            .map(|_| {
                (0..90)
                    .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                    .collect::<String>()
                    + "---\n"
            })
            .collect();
        assert_eq!(too_deep(&docs), None);
        // The nesting found agrees with the parser's: 90 levels parse.
        let v: Result<serde_yaml::Value, _> = serde_yaml::from_str(&format!(
            "{}x\n",
            (0..90)
                .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                .collect::<String>()
                .trim_end()
                .to_string()
                + " "
        ));
        assert!(v.is_ok());
    }
}
