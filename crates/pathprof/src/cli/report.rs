//! `pathprof report`: the hot paths of a profile, as text or JSON.

use anyhow::{bail, Context, Result};
use pathprof::files::{check_outputs, read_module, read_profile, write_atomically};
use pathprof::hint::branches;
use pathprof::render;
use pathprof::source::SourceFiles;
use pathprof::view::{event_index, matches, untested, Rank};
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
    /// Rank hot paths by `cost` (operators executed: count × operators on the path), by `count`,
    /// or, for an `events` profile, by how often an event occurred on them (with its functions'
    /// events).
    #[arg(long, value_name = "cost|count|EVENT", default_value = "cost", conflicts_with = "untested")]
    by: String,
    /// Print each hot path as the source lines it runs, with their text when the files are found.
    #[arg(long, conflicts_with_all = ["json", "untested"])]
    source: bool,
    /// Look for source files under DIR too (with their names' leading directories dropped one by
    /// one).
    #[arg(long, value_name = "DIR")]
    source_root: Option<PathBuf>,
    /// Write the report as one self-contained HTML page (functions, hot paths with their source, a
    /// flame graph) to OUT.html.
    #[arg(long, value_name = "OUT.html", conflicts_with_all = ["json", "untested"])]
    html: Option<PathBuf>,
    /// The most biased and the most evenly split two-way branches (br_if, if), with their source
    /// lines: what to mark likely or cold. Reads the profiled module (--module, or the profile's
    /// module path).
    #[arg(long, conflicts_with_all = ["json", "untested", "html", "source"])]
    branches: bool,
    /// With --branches: the profiled module, when the profile's path does not find it.
    #[arg(long, value_name = "APP.wasm", requires = "branches")]
    module: Option<PathBuf>,
    /// With --branches: leave out branches that ran fewer times.
    #[arg(long, value_name = "N", default_value_t = 100, requires = "branches")]
    min_count: u64,
}

pub fn run(a: Args) -> Result<i32> {
    if let Some(dir) = &a.source_root {
        if !dir.is_dir() {
            bail!("source root {} is not a directory", dir.display());
        }
    }
    if let Some(html) = &a.html {
        check_outputs(&[&a.profile], &[html])?;
    }
    let p = read_profile(&a.profile)?;
    if let Some(f) = &a.function {
        if !p.functions.iter().any(|x| matches(x, f)) {
            bail!("no function {f:?} ran in {}", a.profile.display());
        }
    }
    let mut out = std::io::stdout().lock();
    if a.branches {
        let path = a.module.clone().unwrap_or_else(|| PathBuf::from(&p.module.path));
        let program = read_module(&path)?;
        let (biased, even) = branches(&program, &p, a.function.as_deref(), (a.min_count, 0.9), a.top)
            .with_context(|| format!("cannot read the branches of {}", path.display()))?;
        render::branches::text(&mut out, &p.module.path, &biased, &even)?;
        return Ok(0);
    }
    if a.untested {
        if let Some(u) = pathprof::modes::ips::untested(&p) {
            match a.json {
                true => render::untested::segments_json(&mut out, &p, &u, a.top)?,
                false => render::untested::segments_text(&mut out, &p, &u, a.top)?,
            }
            return Ok(0);
        }
        let Some(u) = untested(&p) else {
            bail!(
                "{} is a {} profile: untested paths come from `pathprof run --mode ppp` (or `--mode ips` for segments) with --interesting",
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
    // Anything but `cost` and `count` names an event.
    let rank = Rank::parse(&a.by);
    if let Some(html) = &a.html {
        let mut files = SourceFiles::new(a.source_root.as_deref());
        let page = render::html::page(&p, a.top, a.function.as_deref(), rank.unwrap_or_default(), &mut files)?;
        write_atomically(html, page.as_bytes())?;
        return Ok(0);
    }
    if a.source {
        let mut files = SourceFiles::new(a.source_root.as_deref());
        render::source::text(&mut out, &p, a.top, a.function.as_deref(), rank.unwrap_or_default(), &mut files)?;
        return Ok(0);
    }
    if rank.is_none() {
        let index = event_index(&p, &a.by).map_err(anyhow::Error::msg)?;
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
    let rank = rank.unwrap_or_default();
    if a.json {
        render::json::write(&mut out, &p, a.top, a.function.as_deref(), rank)?;
    } else {
        render::paths::text(&mut out, &pathprof::Registry::built_in(), &p, a.top, a.function.as_deref(), rank)?;
    }
    Ok(0)
}
