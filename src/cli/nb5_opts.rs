//! NoSQLBench 5's command-line options, as its users type them after `run`
//! (`paceline run` only: the other commands take their own options):
//! mapped onto paceline's before the arguments are parsed, each with a note
//! on standard error, or refused with paceline's equivalent named.
//!
//! | NB5 | here |
//! |---|---|
//! | `--progress console:1s` (`console`, `logonly:5m`, `none`) | `--progress --report-interval 1s`; `logonly` and `none` are `--no-progress` |
//! | `--report-csv-to DIR` | `--csv DIR/paceline.csv` (DIR created, as NB5 does) |
//! | `-v`, `-vv`, `-vvv`, `--show-stacktraces` | dropped: paceline has one level of messages and no stack traces |
//! | `--logs-dir DIR` | refused: paceline writes no session log (`2> FILE` keeps its messages) |

use std::ffi::OsString;

/// The arguments with NB5's options replaced by paceline's, and the notes to
/// print; or why one is refused. Only the words after the subcommand are
/// read, and a word after `--` is left alone.
pub fn translate(args: Vec<OsString>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let mut out: Vec<OsString> = Vec::with_capacity(args.len());
    let mut notes = Vec::new();
    let mut it = args.into_iter().peekable();
    // The program's name and the subcommand pass as they are.
    out.extend(it.next());
    out.extend(it.next());
    while let Some(arg) = it.next() {
        let Some(word) = arg.to_str().map(str::to_string) else {
            out.push(arg);
            continue;
        };
        if word == "--" {
            out.push(arg);
            out.extend(it);
            break;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (word.clone(), None),
        };
        match flag.as_str() {
            "--progress" => {
                // paceline's own `--progress` is a switch; NB5's takes a
                // `MODE[:INTERVAL]` value.
                let value = inline.or_else(|| {
                    it.next_if(|n| n.to_str().is_some_and(is_progress_spec))
                        .and_then(|n| n.into_string().ok())
                });
                match value {
                    None => out.push(arg),
                    Some(spec) => {
                        let (mode, interval) = match spec.split_once(':') {
                            Some((m, i)) => (m.to_string(), Some(i.to_string())),
                            None => (spec.clone(), None),
                        };
                        let mut mapped = vec![if mode == "console" {
                            "--progress".to_string()
                        } else {
                            "--no-progress".to_string()
                        }];
                        if let Some(i) = interval {
                            mapped.push("--report-interval".to_string());
                            mapped.push(i);
                        }
                        notes.push(format!(
                            "NB5's `--progress {spec}` is `{}` here",
                            mapped.join(" ")
                        ));
                        out.extend(mapped.into_iter().map(OsString::from));
                    }
                }
            }
            "--report-csv-to" => {
                let dir = inline
                    .or_else(|| it.next().and_then(|n| n.into_string().ok()))
                    .ok_or("NB5's `--report-csv-to` needs a directory: `--report-csv-to DIR` (paceline's `--csv FILE` writes the intervals as CSV)")?;
                std::fs::create_dir_all(&dir).map_err(|e| {
                    format!(
                        "NB5's `--report-csv-to {dir}`: cannot create the directory: {e}; \
                         check the path, or give paceline's `--csv FILE`"
                    )
                })?;
                let file = std::path::Path::new(&dir).join("paceline.csv");
                notes.push(format!(
                    "NB5's `--report-csv-to {dir}` is `--csv {}` here: one CSV of every \
                     activity's intervals, not one file per metric",
                    file.display()
                ));
                out.push("--csv".into());
                out.push(file.into_os_string());
            }
            "-v" | "-vv" | "-vvv" | "--show-stacktraces" => {
                notes.push(format!(
                    "NB5's `{flag}` is not needed here: paceline prints every note and problem \
                     at one level, and its errors name the place and the fix rather than a \
                     stack trace"
                ));
            }
            "--logs-dir" => {
                return Err(
                    "NB5's `--logs-dir` has no equivalent: paceline writes no session log. Its \
                     notes and problems go to standard error (`2> DIR/paceline.log` keeps \
                     them); the run's numbers go to `--summary-json`, `--csv`, `--hdr-log` \
                     or `--html`"
                        .to_string(),
                );
            }
            _ => out.push(arg),
        }
    }
    Ok((out, notes))
}

/// NB5's `--progress` value: `console`, `logonly` or `none`, with an optional
/// `:INTERVAL`.
fn is_progress_spec(s: &str) -> bool {
    let mode = s.split_once(':').map_or(s, |(m, _)| m);
    matches!(mode, "console" | "logonly" | "none")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Result<(Vec<String>, Vec<String>), String> {
        translate(args.iter().map(OsString::from).collect()).map(|(a, n)| {
            (
                a.into_iter()
                    .map(|s| s.into_string().unwrap_or_default())
                    .collect(),
                n,
            )
        })
    }

    #[test]
    fn nb5_progress_maps_onto_the_switch_and_the_interval() {
        let (a, n) = words(&["p", "run", "w.yaml", "--progress", "console:1s"]).unwrap();
        assert_eq!(
            a,
            [
                "p",
                "run",
                "w.yaml",
                "--progress",
                "--report-interval",
                "1s"
            ]
        );
        assert!(n[0].contains("`--progress console:1s`"), "{n:?}");
        let (a, _) = words(&["p", "run", "--progress=none"]).unwrap();
        assert_eq!(a, ["p", "run", "--no-progress"]);
        // paceline's own switch, followed by a file, is left alone.
        let (a, n) = words(&["p", "run", "--progress", "w.yaml"]).unwrap();
        assert_eq!(a, ["p", "run", "--progress", "w.yaml"]);
        assert!(n.is_empty());
    }

    #[test]
    fn nb5_csv_dir_verbosity_and_logs_dir() {
        let dir = std::env::temp_dir().join(format!("pl-nb5-csv-{}", std::process::id()));
        let d = dir.display().to_string();
        let (a, n) = words(&["p", "run", "--report-csv-to", &d, "-vv"]).unwrap();
        assert_eq!(a[2], "--csv");
        assert_eq!(a[3], dir.join("paceline.csv").display().to_string());
        assert_eq!(a.len(), 4, "-vv is dropped");
        assert!(dir.is_dir());
        assert_eq!(n.len(), 2);
        let _ = std::fs::remove_dir_all(&dir);
        let e = words(&["p", "run", "--logs-dir", "logs"]).unwrap_err();
        assert!(e.contains("2> DIR/paceline.log"), "{e}");
        // After `--`, nothing is read.
        let (a, _) = words(&["p", "run", "--", "-v"]).unwrap();
        assert_eq!(a, ["p", "run", "--", "-v"]);
    }
}
