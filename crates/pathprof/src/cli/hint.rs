//! `pathprof hint`: the program written anew with branch hints from a profile of it (see
//! `pathprof::hint`).

use anyhow::Result;
use pathprof::files::{check_outputs, read_module, read_profile, write_atomically};
use pathprof::hint::{hint, HintOptions};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A profile of the program (its edge counts: exact in bl, kbl, ppp and events:pc, sampled in
    /// pep).
    profile: PathBuf,
    /// The program (a module, or a component whose profiled core module is hinted in place).
    app: PathBuf,
    /// The hinted program.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Hint only branches that ran at least N times.
    #[arg(long, value_name = "N", default_value_t = HintOptions::default().min_count)]
    min_count: u64,
    /// Hint only branches that went their usual way at least this share of the times (0.5 to 1).
    #[arg(long, value_name = "SHARE", default_value_t = HintOptions::default().min_bias, allow_negative_numbers = true)]
    min_bias: f64,
}

pub fn run(a: Args) -> Result<i32> {
    check_outputs(&[&a.profile, &a.app], &[&a.output])?;
    let profile = read_profile(&a.profile)?;
    let program = read_module(&a.app)?;
    let hinted = hint(&program, &profile, &HintOptions { min_count: a.min_count, min_bias: a.min_bias })?;
    write_atomically(&a.output, &hinted.bytes)?;
    eprintln!(
        "pathprof: wrote {}: {} of its {} branches hinted ({} ran in the profile), {} hints of its own kept, {} dropped; the blocks the hints mark cold ran {} times; {} br_if biased not to branch left unhinted, where they lead ran {} times",
        a.output.display(),
        hinted.hinted,
        hinted.branches,
        hinted.ran,
        hinted.kept,
        hinted.dropped,
        hinted.cold,
        hinted.hot_target,
        hinted.spared
    );
    Ok(0)
}
