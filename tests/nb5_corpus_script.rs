//! `tests/nb5_corpus.py` tallies NB5's shipped workloads (not run by `cargo test`:
//! it needs NB5's source); its sentences are pinned by its own `--self-test`,
//! run here. Skips, saying why, where `python3` cannot be run.

use std::process::Command;

/// Regression: a tag filter's refusal for a file naming no driver read
/// "driver `of the command line` makes no synthetic op" in the tally's list.
#[test]
fn the_tally_script_names_the_driver_in_a_sentence() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nb5_corpus.py");
    let out = match Command::new("python3")
        .arg(script)
        .arg("--self-test")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            println!("SKIP: python3 cannot be run here ({e})");
            return;
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("self-test: ok"), "{text}");
}
