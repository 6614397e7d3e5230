//! Text from outside (a server's error, a reply, an alias) made safe to show:
//! on a terminal a control character or escape sequence would act (move the
//! cursor, recolour, retitle the window) instead of being read (audit p17, L7).
//! JSON keeps such text exact; the console, standard error and the HTML report
//! show it escaped, as Rust writes it (`\u{1b}`).

use std::borrow::Cow;

/// Whether `c` acts on a terminal or reorders text instead of showing: a
/// control character other than a newline or a tab, or a bidirectional
/// override or isolate.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that would act on a terminal escaped
/// (an ESC as `\u{1b}`, a carriage return as `\u{d}`); newlines and tabs
/// kept. Borrowed when nothing needs escaping. Pinned by
/// `tests::control_characters_and_escape_sequences_are_shown_escaped`.
pub fn terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `json`, a JSON text, with every character that would act on a terminal
/// written as JSON escapes it (`\u007f`, a pair of `\uXXXX` past U+FFFF):
/// still valid JSON that reads back to the same text, and nothing left for
/// [`terminal`] to escape (review p18, L-3: `check`'s op JSON was escaped as
/// Rust writes it, `\u{7f}`, which is not JSON). Such characters appear in JSON
/// text only inside strings, where the escape means the character itself.
pub fn json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(acts) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if acts(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (review p18, L-3): JSON text stays JSON, with the same value.
    #[test]
    fn json_text_is_escaped_as_json_does() {
        let v = serde_json::json!({"stmt": "a\u{7f}b\u{202e}c\u{1b}[2J\u{9b}"});
        let text = json(&v.to_string()).into_owned();
        assert!(!text.contains("\\u{"), "{text}");
        assert_eq!(terminal(&text), text.as_str());
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }

    /// Regression (audit p17, L7): a redis error `BAD x\1y\27z` reached the
    /// terminal with a raw SOH and ESC.
    #[test]
    fn control_characters_and_escape_sequences_are_shown_escaped() {
        assert_eq!(terminal("BAD x\u{1}y\u{1b}z"), "BAD x\\u{1}y\\u{1b}z");
        assert_eq!(terminal("\u{1b}[2J\u{9b}31m"), "\\u{1b}[2J\\u{9b}31m");
        assert_eq!(terminal("a\rb\u{7f}"), "a\\u{d}b\\u{7f}");
        assert_eq!(terminal("rtl\u{202e}x"), "rtl\\u{202e}x");
        assert!(matches!(
            terminal("plain\ttext\n"),
            Cow::Borrowed("plain\ttext\n")
        ));
        assert_eq!(terminal("é ü 中"), "é ü 中");
    }
}
