//! `pathprof report`: the hot paths of a profile, as text or JSON.

use crate::render;
use anyhow::{bail, Result};
use pathprof::files::read_profile;
use pathprof::view::{event_index, matches, untested};
use std::io::Write;
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
    /// An `events` profile's paths ranked by how often EVENT occurred on them, and its functions'
    /// events.
    #[arg(long, value_name = "EVENT", conflicts_with = "untested")]
    by: Option<String>,
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
    if let Some(event) = &a.by {
        let index = event_index(&p, event).map_err(anyhow::Error::msg)?;
        if a.json {
            render::events::json(&mut out, &p, index, a.top, a.function.as_deref())?;
        } else {
            writeln!(out, "pathprof: events of {} ({})", p.module.path, p.mode)?;
            render::events::summary(&mut out, &p)?;
            render::events::paths(&mut out, &p, index, a.top, a.function.as_deref())?;
            render::events::functions(&mut out, &p, index, a.top, a.function.as_deref())?;
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
