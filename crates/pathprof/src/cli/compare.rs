//! `pathprof compare`: the accuracy of a sampled profile against an exact one of the same module
//! [PEP05 §6.3–6.4].

use anyhow::{bail, Result};
use pathprof::files::read_profile;
use pathprof::render;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    exact: PathBuf,
    sampled: PathBuf,
    /// Hot-path threshold, as a fraction of the total branch flow.
    #[arg(long, default_value_t = pathprof_core::accuracy::HOT_THRESHOLD)]
    threshold: f64,
    /// Functions listed.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

pub fn run(a: Args) -> Result<i32> {
    let exact = read_profile(&a.exact)?;
    let sampled = read_profile(&a.sampled)?;
    if exact.module.sha256 != sampled.module.sha256 {
        bail!("{} and {} profile different modules", a.exact.display(), a.sampled.display());
    }
    render::compare::write(&mut std::io::stdout().lock(), &exact, &sampled, a.threshold, a.top)?;
    Ok(0)
}
