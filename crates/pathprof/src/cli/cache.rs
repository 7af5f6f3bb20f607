//! `pathprof cache`: where compiled programs are kept between runs (see
//! `pathprof_runtime::cache`), how much they take, and clearing them.

use anyhow::{Context, Result};
use pathprof_runtime::cache;

#[derive(clap::Args)]
pub struct Args {
    /// Remove every compiled program kept.
    #[arg(long)]
    clear: bool,
}

pub fn run(a: Args) -> Result<i32> {
    let dir = cache::default_dir()
        .context("no cache directory: set PATHPROF_CACHE_DIR, XDG_CACHE_HOME or HOME to an absolute path")?;
    if a.clear {
        let (files, bytes) = cache::usage(&dir)?;
        cache::clear(&dir)?;
        println!("{}: removed {files} files, {}", dir.display(), mib(bytes));
    } else {
        let (files, bytes) = cache::usage(&dir)?;
        println!("{}: {files} files, {}", dir.display(), mib(bytes));
    }
    Ok(0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}
