//! Where a server binary the tests start is: an environment variable naming it, or
//! the first match on PATH and a few usual directories. Shared by `nginx.rs` and
//! `redis.rs` (each includes this file as a module of its own).

use std::path::PathBuf;

/// The binary `name`: `$var` if set (it must be a file), else the first `name` on
/// PATH or in `extra`; `hint` says how to install it when there is none.
pub fn binary(name: &str, var: &str, extra: &[&str], hint: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{var}={} is not a file", p.display()))
        };
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(extra.iter().map(PathBuf::from));
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| hint.to_string())
}
