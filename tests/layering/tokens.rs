//! The checker's tokenizer: identifiers and punctuation with their lines;
//! comments, strings and char literals dropped.

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident(String),
    Punct(&'static str),
}

/// Tokens of Rust source with their line numbers; comments, string, byte-string, raw
/// string and char literals are dropped (lifetimes are not char literals).
pub(crate) fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                line += usize::from(c[i] == '\n');
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (ch == 'r' || (ch == 'b' && at(i + 1) == 'r'))
            && matches!(at(i + 1 + usize::from(ch == 'b')), '"' | '#')
            && {
                // r"..." or r#"..."#, not an identifier such as `r#type`
                let mut j = i + 1 + usize::from(ch == 'b');
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            }
        {
            let mut j = i + 1 + usize::from(ch == 'b');
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#') {
                    j += 1 + hashes;
                    break;
                }
                line += usize::from(c[j] == '\n');
                j += 1;
            }
            i = j;
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                // escaped char literal: skip to the closing quote
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3; // 'x'
            } else {
                i += 1; // a lifetime's quote
            }
        } else if ch == 'b' && at(i + 1) == '\'' {
            i += 1; // b'x': the quote is handled next round
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(c[start..i].iter().collect()), line));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::Punct("::"), line));
            i += 2;
        } else {
            let p = match ch {
                '{' => "{",
                '}' => "}",
                ',' => ",",
                ';' => ";",
                '*' => "*",
                '!' => "!",
                _ => "other",
            };
            out.push((Tok::Punct(p), line));
            i += 1;
        }
    }
    out
}

pub(crate) fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

pub(crate) fn punct(t: Option<&(Tok, usize)>, p: &str) -> bool {
    matches!(t, Some((Tok::Punct(q), _)) if *q == p)
}
