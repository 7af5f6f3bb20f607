//! `pathprof export`: a profile as folded stacks, an SVG flame graph, a pprof profile or a
//! speedscope file (see `pathprof::export`).

use anyhow::{anyhow, bail, Result};
use pathprof::export::{flame_graph, folded, folded_paths, pprof, speedscope, Drawing};
use pathprof::files::{check_outputs, read_profile, write_atomically};
use pathprof::view::{matches, Rank};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("output").args(["folded", "svg", "pprof", "speedscope"]).required(true).multiple(true)))]
pub struct Args {
    profile: PathBuf,
    /// Write folded stacks to this file (`-`: standard output): `function;path frame;... COUNT`
    /// per k-iteration sequence for a `kbl` profile, `function;path frame WEIGHT` per path otherwise.
    #[arg(long, value_name = "OUT")]
    folded: Option<PathBuf>,
    /// Draw the flame graph of the folded stacks to this SVG file (`-`: standard output).
    #[arg(long, value_name = "OUT")]
    svg: Option<PathBuf>,
    /// Write the paths as a gzipped pprof profile (`profile.proto`) to this file.
    #[arg(long, value_name = "OUT")]
    pprof: Option<PathBuf>,
    /// Write the paths as a speedscope file (JSON) to this file (`-`: standard output).
    #[arg(long, value_name = "OUT")]
    speedscope: Option<PathBuf>,
    /// Weight of a path in folded stacks and flame graphs: `cost` (operators executed, the default)
    /// or `count`. A `kbl` profile's forests are drawn by count; `--weight cost` draws its paths.
    #[arg(long, value_name = "cost|count")]
    weight: Option<String>,
    /// Only this function (its name or its index).
    #[arg(long)]
    function: Option<String>,
}

/// Writes `data` to the file `path`, or to standard output when `path` is `-`.
fn write_output(path: &Path, data: &[u8]) -> Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(data)?;
        out.flush()?;
        Ok(())
    } else {
        write_atomically(path, data)
    }
}

/// Reads the profile, then writes each format asked for (`-` is standard output).
pub fn run(a: Args) -> Result<i32> {
    let outputs = [&a.folded, &a.svg, &a.pprof, &a.speedscope];
    let to_stdout = outputs.iter().filter(|o| o.as_deref() == Some(Path::new("-"))).count();
    if to_stdout > 1 {
        bail!("only one output can be standard output");
    }
    if a.pprof.as_deref() == Some(Path::new("-")) {
        bail!("--pprof writes gzipped binary data: give it a file");
    }
    let files: Vec<&Path> = outputs.into_iter().flatten().map(PathBuf::as_path).collect();
    check_outputs(&[&a.profile], &files)?;
    let weight = match a.weight.as_deref() {
        None => None,
        Some(w) => Some(Rank::parse(w).ok_or_else(|| anyhow!("unknown weight {w:?} (expected cost or count)"))?),
    };
    let p = read_profile(&a.profile)?;
    let function = a.function.as_deref();
    if let Some(sel) = function {
        if !p.functions.iter().any(|f| matches(f, sel)) {
            bail!("no function {sel:?} ran in {}", a.profile.display());
        }
    }
    if p.functions.iter().all(|f| f.paths().is_empty()) {
        bail!("{} has no paths to export (a {} profile)", a.profile.display(), p.mode);
    }
    if a.folded.is_some() || a.svg.is_some() {
        let forests = p.functions.iter().any(|f| f.kipf().is_some()) && weight != Some(Rank::Cost);
        let (lines, drawing) = if forests {
            (folded(&p, function), Drawing::Forests)
        } else {
            let weight = weight.unwrap_or_default();
            (folded_paths(&p, function, weight), Drawing::Paths(weight))
        };
        let svg = a.svg.as_ref().map(|_| flame_graph(&p, &lines, function, drawing)).transpose()?;
        if let Some(path) = &a.folded {
            let mut text = lines.join("\n");
            if !text.is_empty() {
                text.push('\n');
            }
            write_output(path, text.as_bytes())?;
        }
        if let (Some(path), Some(svg)) = (&a.svg, svg) {
            write_output(path, &svg)?;
        }
    }
    if let Some(path) = &a.pprof {
        write_atomically(path, &pprof::write(&p, function)?)?;
    }
    if let Some(path) = &a.speedscope {
        write_output(path, &speedscope::write(&p, function)?)?;
    }
    Ok(0)
}
