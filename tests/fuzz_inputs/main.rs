//! The input fuzzer (issue 25): mutates the bundled activities and the docs'
//! YAML examples (bytes, lines, tokens, extreme numbers, YAML structure: deep
//! nesting, alias bombs, tags, a BOM, NUL, thousands of ops), fuzzes command-line
//! params and control requests, and runs the real binary on each in bounded
//! time. What must hold:
//!
//! - no panic and no death by a signal;
//! - no hang: `check` ends on its own, a tiny `run` ends or stops at an interrupt;
//! - `check` exits 0 or 2, `run` 0, 1 (the run failed, and says why) or 2;
//! - every exit-2 message names a place: `FILE:LINE:COLUMN:` or `param N:`;
//! - a control request gets an HTTP answer, never a 5xx, and the run lives on.
//!
//! `cargo test` runs a few hundred cases; `PACELINE_FUZZ_CASES=N` runs N per
//! test, `PACELINE_FUZZ_SEED=S` draws another sequence. A failing case's input
//! is kept in the temp directory the failure names.
//!
//! One test binary: `mutate` (the seeds and the mutations), `harness` (a case
//! run in bounded time and judged), `runs` (activity files and command-line
//! params) and `control` (control requests).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[path = "../support/bin.rs"]
mod bin;
use bin::{bin, temp, text};

mod control;
mod harness;
mod mutate;
mod runs;

use harness::{fuzz, judge, run_bounded, wait};
use mutate::{mutate, seeds};

/// Cases per test unless `PACELINE_FUZZ_CASES` says otherwise.
const DEFAULT_CASES: usize = 100;

fn cases() -> usize {
    std::env::var("PACELINE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn seed() -> u64 {
    std::env::var("PACELINE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25)
}

/// splitmix64: small, deterministic, good enough to draw mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
