//! The inputs: the seeds (every bundled activity and the docs' YAML examples)
//! and the mutations drawn on them.

use super::*;

/// The seeds: every bundled activity and every YAML example in the docs.
pub(crate) fn seeds() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("activities"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.push(root.join("docs/report-demo.yaml"));
    files.sort();
    for f in files {
        if let Ok(t) = std::fs::read_to_string(&f) {
            out.push((f.display().to_string(), t));
        }
    }
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    docs.sort();
    for d in docs
        .iter()
        .filter(|d| d.extension().is_some_and(|e| e == "md"))
    {
        let Ok(t) = std::fs::read_to_string(d) else {
            continue;
        };
        for (i, block) in t.split("```yaml\n").skip(1).enumerate() {
            if let Some((yaml, _)) = block.split_once("```") {
                out.push((format!("{}#{i}", d.display()), yaml.to_string()));
            }
        }
    }
    assert!(out.len() >= 10, "seeds: {}", out.len());
    out
}

const EXTREME_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e-300",
    "1e309",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    ".nan",
    ".inf",
    "-.inf",
    "0x7fffffffffffffff",
    "1_000",
    "1B",
    "1T",
    "99999999999K",
];

const ODD_BYTES: &[&str] = &[
    "\0",
    "\t",
    "\u{1}",
    "\u{7f}",
    "\u{feff}",
    "{",
    "}",
    "[",
    "]",
    ":",
    ": ",
    "&a ",
    "*a",
    "!!",
    "---\n",
    "...\n",
    "\n",
    "'",
    "\"",
    "{{",
    "<<",
    "TEMPLATE(",
    "%",
    "|",
    ">",
    "#",
    "\u{2028}",
    "é",
    "\r",
];

const VALUES: &[&str] = &[
    "",
    "~",
    "[]",
    "{}",
    "[[]]",
    "null",
    "true",
    "-",
    "?",
    "'unterminated",
    "\"\\u0000\"",
    "!!binary aGVsbG8=",
    "!custom x",
    "!!str 5",
    "!!int x",
    "!!float",
    "{a: *nope}",
    "&x [*x]",
    "<<: {a: 1}",
    "Mod(",
    "Hash(); Mod(0)",
    "Uniform(0, -1)",
    "{cycle}",
    "{nope}",
];

/// Mutates `text` once; returns a word for what was done.
pub(crate) fn mutate(rng: &mut Rng, text: &mut String) -> &'static str {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = |rng: &mut Rng, t: &str| {
        let mut i = rng.below(t.len() + 1);
        while !t.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    match rng.below(15) {
        0 => {
            let mut bytes = std::mem::take(text).into_bytes();
            if !bytes.is_empty() {
                let i = rng.below(bytes.len());
                bytes[i] = (rng.next() & 0x7f) as u8;
            }
            *text = String::from_utf8_lossy(&bytes).into_owned();
            "flip a byte"
        }
        1 => {
            let i = at(rng, text);
            let s = *rng.pick(ODD_BYTES);
            text.insert_str(i, s);
            "insert odd bytes"
        }
        2 => {
            let i = at(rng, text);
            let mut j = (i + rng.below(40)).min(text.len());
            while !text.is_char_boundary(j) {
                j -= 1;
            }
            text.replace_range(i..j.max(i), "");
            "delete bytes"
        }
        3..=5 if !lines.is_empty() => {
            let mut l = lines;
            let i = rng.below(l.len());
            let what = match rng.below(3) {
                0 => {
                    l.remove(i);
                    "delete a line"
                }
                1 => {
                    let d = l[i].clone();
                    l.insert(i, d);
                    "duplicate a line"
                }
                _ => {
                    let j = rng.below(l.len());
                    l.swap(i, j);
                    "swap lines"
                }
            };
            *text = l.join("\n") + "\n";
            what
        }
        6 => {
            // A number token, or any value, becomes an extreme number.
            let n = *rng.pick(EXTREME_NUMBERS);
            let starts: Vec<usize> = text
                .char_indices()
                .filter(|(i, c)| {
                    c.is_ascii_digit()
                        && !text[..*i].ends_with(|p: char| p.is_ascii_alphanumeric() || p == '.')
                })
                .map(|(i, _)| i)
                .collect();
            if starts.is_empty() {
                return "no number";
            }
            let s = *rng.pick(&starts);
            let e = text[s..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
                .map_or(text.len(), |k| s + k);
            text.replace_range(s..e, n);
            "extreme number"
        }
        7 => {
            // A value after `: ` becomes an odd value.
            let spots: Vec<usize> = text.match_indices(": ").map(|(i, _)| i + 2).collect();
            if spots.is_empty() {
                return "no value";
            }
            let s = *rng.pick(&spots);
            let e = text[s..].find('\n').map_or(text.len(), |k| s + k);
            let v = *rng.pick(VALUES);
            text.replace_range(s..e, v);
            "odd value"
        }
        8 => {
            text.insert(0, '\u{feff}');
            "byte order mark"
        }
        9 => {
            let depth = [20, 200, 2000, 20000][rng.below(4)];
            let nest = if rng.below(2) == 0 {
                "[".repeat(depth) + &"]".repeat(depth)
            } else {
                "{a: ".repeat(depth) + "1" + &"}".repeat(depth)
            };
            text.push_str(&format!("\ndeep: {nest}\n"));
            "deep nesting"
        }
        10 => {
            let mut bomb = String::from(
                "\nbomb:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
            );
            for (k, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
                .iter()
                .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
            {
                bomb.push_str(&format!(
                    "  {k}: &{k} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
                ));
            }
            text.push_str(&bomb);
            "alias bomb"
        }
        11 => {
            let spots: Vec<usize> = text.match_indices(": ").map(|(i, _)| i + 2).collect();
            if spots.is_empty() {
                return "no value";
            }
            let s = *rng.pick(&spots);
            let tag = *rng.pick(&[
                "!!binary ",
                "!custom ",
                "!!str ",
                "!!map ",
                "!!seq ",
                "!<tag:x> ",
            ]);
            text.insert_str(s, tag);
            "tag"
        }
        12 => {
            let n = [100, 3000][rng.below(2)];
            let ops: String = (0..n)
                .map(|i| format!("  gen{i}: \"op {i} {{cycle}}\"\n"))
                .collect();
            match text.find("\nops:\n") {
                Some(i) => text.insert_str(i + "\nops:\n".len(), &ops),
                None => text.push_str(&format!("\nops:\n{ops}")),
            }
            "thousands of ops"
        }
        13 if !lines.is_empty() => {
            let mut l = lines;
            let i = rng.below(l.len());
            if rng.below(2) == 0 {
                l[i].insert(0, ' ');
            } else {
                l[i] = l[i].trim_start().to_string();
            }
            *text = l.join("\n") + "\n";
            "indentation"
        }
        _ => {
            text.insert(at(rng, text), '\0');
            "NUL"
        }
    }
}
