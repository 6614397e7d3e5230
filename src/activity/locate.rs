//! Positions of YAML nodes, from the YAML parser itself.
//!
//! `yaml_serde` gives a position only on an error, and then the position of the
//! node being deserialized when the error was raised. So to find a node we walk
//! the document with a deserializer that raises a marker error exactly at that
//! node (its key, or its value) and read the error's location. One pass of the
//! parser per located problem: problems are few and files are small, and the
//! positions are exactly the parser's own, even for flow style, quoting and
//! anchors, where scanning the text would guess.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// One step of a path into the document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Whether a problem is about a map key or the value under it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Target {
    Key,
    Value,
}

pub(crate) const MARKER: &str = "\u{0}paceline-locate\u{0}";

/// The 1-based (line, column) of the node at `path` in `source`, or `None` if the
/// path is not in the document.
pub(crate) fn locate(source: &str, path: &[Seg], target: Target) -> Option<(usize, usize)> {
    let de = serde_yaml::Deserializer::from_str(source);
    match (Find { path, target }).deserialize(de) {
        Err(e) if e.to_string().contains(MARKER) => e.location().map(|l| (l.line(), l.column())),
        _ => None,
    }
}

struct Find<'p> {
    path: &'p [Seg],
    target: Target,
}

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

macro_rules! here_or_nothing {
    ($($name:ident: $t:ty),*) => {$(
        fn $name<E: de::Error>(self, _v: $t) -> Result<(), E> {
            if self.path.is_empty() { Err(E::custom(MARKER)) } else { Ok(()) }
        }
    )*};
}

impl<'de> Visitor<'de> for Find<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    here_or_nothing!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64,
        visit_str: &str, visit_i128: i128, visit_u128: u128);

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        if self.path.is_empty() {
            Err(E::custom(MARKER))
        } else {
            Ok(())
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (want, rest) = match self.path.split_first() {
            None => return Err(de::Error::custom(MARKER)),
            Some((Seg::Key(k), rest)) => (k.as_str(), rest),
            Some((Seg::Index(_), _)) => return Ok(()),
        };
        let key_is_target = rest.is_empty() && self.target == Target::Key;
        while let Some(matched) = map.next_key_seed(KeyMatch {
            want,
            is_target: key_is_target,
        })? {
            if matched {
                return map.next_value_seed(Find {
                    path: rest,
                    target: self.target,
                });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let (want, rest) = match self.path.split_first() {
            None => return Err(de::Error::custom(MARKER)),
            Some((Seg::Index(i), rest)) => (*i, rest),
            Some((Seg::Key(_), _)) => return Ok(()),
        };
        let mut i = 0;
        loop {
            if i == want {
                return seq
                    .next_element_seed(Find {
                        path: rest,
                        target: self.target,
                    })
                    .map(|_| ());
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
}

/// Deserializes a map key, compares it with the wanted one, and raises the
/// marker there when the key itself is the target.
struct KeyMatch<'a> {
    want: &'a str,
    is_target: bool,
}

impl KeyMatch<'_> {
    fn check<E: de::Error>(&self, key: &str) -> Result<bool, E> {
        if key != self.want {
            Ok(false)
        } else if self.is_target {
            Err(E::custom(MARKER))
        } else {
            Ok(true)
        }
    }
}

impl<'de> DeserializeSeed<'de> for KeyMatch<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyMatch<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.check(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        self.check("null")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Seg {
        Seg::Key(s.to_string())
    }

    #[test]
    fn finds_keys_and_values_in_block_and_flow_style() {
        let src = "a: 1\nparams:\n  threads: 4\n  list: [x, 'y', {z: 3}]\nflow: {p: q}\n";
        assert_eq!(locate(src, &[k("a")], Target::Key), Some((1, 1)));
        assert_eq!(locate(src, &[k("a")], Target::Value), Some((1, 4)));
        assert_eq!(
            locate(src, &[k("params"), k("threads")], Target::Key),
            Some((3, 3))
        );
        assert_eq!(
            locate(src, &[k("params"), k("threads")], Target::Value),
            Some((3, 12))
        );
        let list = [k("params"), k("list")];
        assert_eq!(
            locate(
                src,
                &[list[0].clone(), list[1].clone(), Seg::Index(1)],
                Target::Value
            ),
            Some((4, 13))
        );
        let z = [k("params"), k("list"), Seg::Index(2), k("z")];
        assert_eq!(locate(src, &z, Target::Key), Some((4, 19)));
        assert_eq!(
            locate(src, &[k("flow"), k("p")], Target::Value),
            Some((5, 11))
        );
        assert_eq!(locate(src, &[k("nope")], Target::Key), None);
        assert_eq!(
            locate(src, &[k("params"), Seg::Index(0)], Target::Key),
            None
        );
    }
}
