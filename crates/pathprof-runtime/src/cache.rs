//! Where compiled programs are kept between runs. Every `pathprof run` compiles an instrumented
//! module afresh unless its engine keeps compiled code ([`EngineOptions::cache`](crate::EngineOptions));
//! a large program (tens of MB of code) then compiles once, not at every run. The cache is
//! Wasmtime's own: an entry is found by the program's bytes, the engine's settings and Wasmtime's
//! version, so a program instrumented otherwise, or an engine set otherwise, never takes another's
//! code. Entries are compressed, and Wasmtime trims the directory when it grows past its limits.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The directory of compiled code: `$PATHPROF_CACHE_DIR`, else `$XDG_CACHE_HOME/pathprof`, else
/// `$HOME/.cache/pathprof`; `None` when none of them is an absolute path.
pub fn default_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    var("PATHPROF_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("pathprof")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/pathprof")))
}

/// Files and bytes in the cache directory `dir` (nothing when it does not exist).
pub fn usage(dir: &Path) -> Result<(u64, u64)> {
    let mut total = (0, 0);
    if !dir.exists() {
        return Ok(total);
    }
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total = (total.0 + 1, total.1 + meta.len());
            }
        }
    }
    Ok(total)
}

/// Removes the cache directory `dir` and everything in it, after checking that it is one: a
/// directory holding only what Wasmtime's cache writes (its `modules` folder, and the marker of its
/// last clean-up) and nothing else.
pub fn clear(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if !(name == "modules" || name.starts_with(".cleanup")) {
            bail!("{} holds {name}, which the cache does not write: remove it yourself", dir.display());
        }
    }
    std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))
}
