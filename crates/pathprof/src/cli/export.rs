//! `pathprof export`: the k-iteration path forests of a `kbl` profile as folded stacks and/or an SVG
//! flame graph (see `pathprof::export`).

use anyhow::{bail, Result};
use pathprof::export::{flame_graph, folded};
use pathprof::files::{read_profile, write_atomically};
use pathprof::view::matches;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("output").args(["folded", "svg"]).required(true).multiple(true)))]
pub struct Args {
    profile: PathBuf,
    /// Write folded stacks (`function;path;path... COUNT`, one line per sequence) to this file
    /// (`-`: standard output).
    #[arg(long, value_name = "OUT")]
    folded: Option<PathBuf>,
    /// Draw the flame graph to this SVG file (`-`: standard output).
    #[arg(long, value_name = "OUT")]
    svg: Option<PathBuf>,
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

/// Checks that the profile has k-IPFs, then writes the folded stacks and the flame graph (each when
/// asked for; `-` is standard output).
pub fn run(a: Args) -> Result<i32> {
    let (profile, folded_out, svg_out, function) =
        (a.profile.as_path(), a.folded.as_deref(), a.svg.as_deref(), a.function.as_deref());
    if folded_out.is_some_and(|p| p == Path::new("-")) && svg_out.is_some_and(|p| p == Path::new("-")) {
        bail!("--folded and --svg cannot both write to standard output");
    }
    let p = read_profile(profile)?;
    if !p.functions.iter().any(|f| f.kipf().is_some()) {
        bail!(
            "{} is a {} profile without k-iteration path forests: export needs one from `pathprof run --mode kbl`",
            profile.display(),
            p.mode
        );
    }
    if let Some(sel) = function {
        if !p.functions.iter().any(|f| matches(f, sel)) {
            bail!("no function {sel:?} in {}", profile.display());
        }
    }
    let lines = folded(&p, function);
    let svg = svg_out.map(|_| flame_graph(&p, &lines, function)).transpose()?;
    if let Some(path) = folded_out {
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        write_output(path, text.as_bytes())?;
    }
    if let (Some(path), Some(svg)) = (svg_out, svg) {
        write_output(path, &svg)?;
    }
    Ok(0)
}
