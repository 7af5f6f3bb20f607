//! `pathprof decode`: the profile of a run recorded under another engine by pathprof's JavaScript
//! host (see `pathprof::dump`), decoded with the map `pathprof instrument` wrote.

use anyhow::{anyhow, Context, Result};
use pathprof::dump::{decode, Dump};
use pathprof::files::{check_outputs, read_profile, write_atomically};
use pathprof_wasm::ProfileMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The map of the instrumented module (`pathprof instrument` writes it beside the module).
    map: PathBuf,
    /// The dump the JavaScript host wrote of the run.
    dump: PathBuf,
    /// Where to write the profile.
    #[arg(short = 'o', long = "output", required = true)]
    output: PathBuf,
    /// kbl: keep at most N k-SF nodes, as for `run`.
    #[arg(long, value_name = "N")]
    max_nodes: Option<usize>,
    /// ips, ippp: the profiles whose segments are interesting, given to `instrument` (repeatable;
    /// the residual segments are marked from them).
    #[arg(long, value_name = "PROFILE")]
    interesting: Vec<PathBuf>,
}

pub fn run(a: Args) -> Result<i32> {
    let inputs: Vec<&std::path::Path> =
        [&a.map, &a.dump].into_iter().chain(&a.interesting).map(PathBuf::as_path).collect();
    check_outputs(&inputs, &[&a.output])?;
    let text = std::fs::read_to_string(&a.map).with_context(|| format!("cannot read {}", a.map.display()))?;
    let map = ProfileMap::from_json(&text).map_err(|e| anyhow!("cannot read {}: {e}", a.map.display()))?;
    let bytes = std::fs::read(&a.dump).with_context(|| format!("cannot read {}", a.dump.display()))?;
    let dump = Dump::read(&bytes).with_context(|| format!("cannot read {}", a.dump.display()))?;
    let tested =
        (a.interesting.iter()).map(|f| Ok((f.display().to_string(), read_profile(f)?))).collect::<Result<Vec<_>>>()?;
    let profile =
        decode(&map, dump, a.max_nodes, &tested).with_context(|| format!("cannot decode {}", a.dump.display()))?;
    write_atomically(&a.output, profile.to_json().as_bytes())?;
    eprintln!(
        "pathprof: decoded {} ({} mode {}): {} path executions in {}",
        a.dump.display(),
        profile.module.path,
        profile.mode.name(),
        profile.path_executions,
        a.output.display()
    );
    Ok(0)
}
