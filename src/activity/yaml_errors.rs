//! Places for the YAML errors the parser gives no mark, or the wrong one: a
//! duplicate key (the parser marks the map, not the key), a control character
//! (a byte offset in the message), a second document (no mark at all).

use super::locate::MARKER;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// The message to show and the 1-based (line, column) of the error `msg` the
/// parser raised on `text`, when this module knows better than the parser.
pub(crate) fn place(text: &str, msg: &str) -> (String, Option<(usize, usize)>) {
    if msg.contains("duplicate entry with key") {
        return (msg.to_string(), duplicate_key(text));
    }
    if msg.contains("repetition limit exceeded") {
        return (
            "aliases expand to too many nodes (aliases of aliases: an alias bomb)".to_string(),
            first_alias(text),
        );
    }
    if msg.contains("more than one document") {
        return (
            "the file holds more than one YAML document (a second `---`)".to_string(),
            second_document(text),
        );
    }
    if let Some(i) = msg.rfind(" at position ")
        && let Ok(offset) = msg[i + " at position ".len()..].trim().parse::<usize>()
    {
        return (msg[..i].to_string(), Some(line_column(text, offset)));
    }
    (msg.to_string(), None)
}

/// The 1-based (line, column) of byte `offset` of `text` (columns in characters).
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The first alias (`*name`) in `text`: where expanding aliases begins.
fn first_alias(text: &str) -> Option<(usize, usize)> {
    for (i, line) in text.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        for (j, w) in chars.windows(2).enumerate() {
            let before = if j == 0 { ' ' } else { chars[j - 1] };
            if w[0] == '*'
                && (w[1].is_alphanumeric() || w[1] == '_')
                && (before.is_whitespace() || matches!(before, '[' | '{' | ',' | ':' | '-'))
            {
                return Some((i + 1, j + 1));
            }
        }
        // `*a` at the very start of a line.
        if line.starts_with('*') && line.len() > 1 {
            return Some((i + 1, 1));
        }
    }
    None
}

/// Where the second document starts: the line of its `---` (or, after a `...`,
/// its first line).
fn second_document(text: &str) -> Option<(usize, usize)> {
    let mut content = false;
    let mut ended = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_end();
        let is_start = t == "---" || t.starts_with("--- ") || t.starts_with("---\t");
        if is_start {
            if content || ended {
                return Some((i + 1, 1));
            }
            // The first document's own `---`.
            content = true;
            continue;
        }
        if t == "..." {
            ended = true;
            continue;
        }
        let blank = t.trim_start().is_empty() || t.trim_start().starts_with('#');
        if ended && !blank {
            return Some((i + 1, 1));
        }
        if !blank && !t.starts_with('%') {
            content = true;
        }
    }
    None
}

/// The position of the first key that repeats one of its map, found by the
/// parser itself: a walk of the document that raises a marker at that key.
fn duplicate_key(text: &str) -> Option<(usize, usize)> {
    let de = serde_yaml::Deserializer::from_str(text);
    match Walk.deserialize(de) {
        Err(e) if e.to_string().contains(MARKER) => e.location().map(|l| (l.line(), l.column())),
        _ => None,
    }
}

/// Walks every node.
struct Walk;

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while map.next_key_seed(Key { seen: &mut seen })?.is_some() {
            map.next_value_seed(Walk)?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Walk)?.is_some() {}
        Ok(())
    }
}

/// A map key: raises the marker at a key its map has already seen.
struct Key<'s> {
    seen: &'s mut HashSet<String>,
}

impl Key<'_> {
    fn check<E: de::Error>(self, key: String) -> Result<(), E> {
        if self.seen.insert(key) {
            Ok(())
        } else {
            Err(E::custom(MARKER))
        }
    }
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.check(v.to_string())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.check(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.check(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.check(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.check(v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.check("null".to_string())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        Walk.visit_map(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Walk.visit_seq(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25, item 10: each error at its real line and column.
    #[test]
    fn item10_marks_for_a_duplicate_key_a_control_character_and_a_second_document() {
        let dup = "params: {driver: d}\nops:\n  a: x\n  b: y\n  a: z\n";
        assert_eq!(duplicate_key(dup), Some((5, 3)));
        let flow = "ops: {a: x, a: y}\n";
        assert_eq!(duplicate_key(flow), Some((1, 13)));
        assert_eq!(duplicate_key("a: {b: 1}\nc: {b: 2}\n"), None);

        let (msg, at) = place(
            "a: 1\nb: \"x\u{1}\"\n",
            "control characters are not allowed at position 9",
        );
        assert_eq!(
            (msg.as_str(), at),
            ("control characters are not allowed", Some((2, 5)))
        );

        assert_eq!(second_document("a: 1\n---\nb: 2\n"), Some((2, 1)));
        assert_eq!(
            second_document("# c\n---\na: 1\n--- \nb: 2\n"),
            Some((4, 1))
        );
        assert_eq!(second_document("a: 1\n...\n\nb: 2\n"), Some((4, 1)));

        // An alias bomb: at the first alias.
        let (msg, at) = place("a: &a [x, x]\nb: [*a, *a]\n", "repetition limit exceeded");
        assert!(msg.contains("alias bomb"), "{msg}");
        assert_eq!(at, Some((2, 5)));
    }
}
