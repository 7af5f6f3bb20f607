//! The table of `pathprof bench --hints`: a row per program, and each variant's summary.

use super::truncate;
use crate::bench::hints::{HintFigures, HintReport};
use crate::bench::MIN_TIMED_SECONDS;
use anyhow::Result;
use std::io::Write;

/// Header of the table.
pub fn header(out: &mut impl Write) -> Result<()> {
    writeln!(
        out,
        "{:<40} {:>8} {:>7} {:>5} {:>10} {:>6} {:>7} {:>9} {:>7} {:>10} {:>7}",
        "program", "branches", "hinted", "code", "off ms", "±", "on", "inverted", "other", "pep hinted", "pep"
    )?;
    Ok(())
}

/// One program's row.
pub fn row(out: &mut impl Write, f: &HintFigures) -> Result<()> {
    let code = match f.code_changed {
        Some(true) => "new",
        Some(false) => "same",
        None => "-",
    };
    let other = f.other_input_ratio.map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
    writeln!(
        out,
        "{:<40} {:>8} {:>7} {:>5} {:>10.3} {:>5.1}% {:>7.3} {:>9.3} {:>7} {:>10} {:>7.3}",
        truncate(&f.program, 40),
        f.branches,
        f.hinted,
        code,
        f.off_median_seconds * 1e3,
        f.off_spread * 100.0,
        f.on_ratio,
        f.inverted_ratio,
        other,
        f.pep_hinted,
        f.pep_ratio
    )?;
    out.flush()?;
    Ok(())
}

/// Each variant's geometric mean over the programs, and the programs it made faster or slower.
pub fn summary(out: &mut impl Write, r: &HintReport) -> Result<()> {
    for s in &r.summary {
        writeln!(
            out,
            "{}: geometric mean ratio {:.3} over {} programs; at least 2 % faster: {}; at least 1 % slower: {}",
            s.variant,
            s.geomean_ratio,
            s.programs,
            list(&s.faster_2_percent),
            list(&s.slower_1_percent)
        )?;
    }
    if !r.untimed.is_empty() {
        let under = MIN_TIMED_SECONDS * 1e6;
        writeln!(
            out,
            "left out (unhinted bench region under {under:.0} µs, too short to time): {}",
            r.untimed.join(", ")
        )?;
    }
    if let Some(share) = r.pep_share_of_speedup {
        writeln!(
            out,
            "pep: {:.0} % of the speedup of bl's hints, on the programs they make at least 2 % faster",
            share * 100.0
        )?;
    }
    Ok(())
}

fn list(programs: &[String]) -> String {
    if programs.is_empty() {
        "none".to_string()
    } else {
        programs.join(", ")
    }
}
