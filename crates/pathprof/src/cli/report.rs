//! `pathprof report`: the hot paths of a profile, as text or JSON.

use crate::render;
use anyhow::{bail, Result};
use pathprof::files::read_profile;
use pathprof::view::{matches, untested};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    profile: PathBuf,
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Only this function (its name or its index).
    #[arg(long)]
    function: Option<String>,
    /// Print the selected paths as JSON.
    #[arg(long)]
    json: bool,
    /// A `ppp` profile's untested paths (residual path profiling) and their figures.
    #[arg(long)]
    untested: bool,
}

pub fn run(a: Args) -> Result<i32> {
    let p = read_profile(&a.profile)?;
    if let Some(f) = &a.function {
        if !p.functions.iter().any(|x| matches(x, f)) {
            bail!("no function {f:?} in {}", a.profile.display());
        }
    }
    let mut out = std::io::stdout().lock();
    if a.untested {
        let Some(u) = untested(&p) else {
            bail!(
                "{} is a {} profile: untested paths come from `pathprof run --mode ppp`",
                a.profile.display(),
                p.mode
            );
        };
        match a.json {
            true => render::untested::json(&mut out, &u, a.top)?,
            false => render::untested::text(&mut out, &p, &u, a.top)?,
        }
        return Ok(0);
    }
    if a.json {
        render::json::write(&mut out, &p, a.top, a.function.as_deref())?;
    } else {
        render::paths::text(&mut out, &p, a.top, a.function.as_deref())?;
    }
    Ok(0)
}
