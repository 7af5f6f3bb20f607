//! `pathprof merge`: profiles of several runs of one module added up into one (see
//! `pathprof::merge`).

use anyhow::Result;
use pathprof::files::{check_outputs, read_profile, write_atomically};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Profiles of the same module, taken in the same mode with the same settings.
    #[arg(required = true, num_args = 1..)]
    profiles: Vec<PathBuf>,
    /// Where to write the merged profile.
    #[arg(short = 'o', long = "output", required = true)]
    output: PathBuf,
}

pub fn run(a: Args) -> Result<i32> {
    let inputs: Vec<&Path> = a.profiles.iter().map(PathBuf::as_path).collect();
    check_outputs(&inputs, &[&a.output])?;
    let profiles = a
        .profiles
        .iter()
        .map(|path| Ok((path.display().to_string(), read_profile(path)?)))
        .collect::<Result<Vec<_>>>()?;
    let merged = pathprof::merge::merge(&pathprof::Registry::built_in(), &profiles)?;
    write_atomically(&a.output, merged.to_json().as_bytes())?;
    eprintln!(
        "pathprof: {} runs of {} merged into {}: {} path executions",
        merged.runs,
        merged.module.path,
        a.output.display(),
        merged.path_executions
    );
    Ok(0)
}
