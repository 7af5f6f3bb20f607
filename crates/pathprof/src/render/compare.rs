//! The accuracy of a sampled profile against an exact one [PEP05 §6.3–6.4], over the whole program
//! and for the functions with the most branch flow.

use super::{group, truncate};
use crate::view::function_label;
use anyhow::Result;
use pathprof_core::accuracy::{compare_functions, Accuracy};
use pathprof_core::profile::Profile;
use std::io::Write;

/// Path accuracy (Wall weight matching), relative and absolute edge overlap of `sampled` against
/// `exact`, over the whole program and for the functions with the most branch flow.
pub fn write(out: &mut impl Write, exact: &Profile, sampled: &Profile, threshold: f64, top: usize) -> Result<()> {
    let all = compare_functions(&exact.functions, &sampled.functions, threshold);
    writeln!(out, "{} ({}) against {} ({})", sampled.module.path, sampled.mode, exact.module.path, exact.mode)?;
    if let Some(s) = sampled.mode.sampling() {
        writeln!(out, "  {} samples in {} ticks", group(s.samples_taken), group(s.ticks))?;
    }
    writeln!(
        out,
        "  path accuracy (Wall weight matching, hot above {:.3}% of branch flow): {:.2}%",
        threshold * 100.0,
        all.paths * 100.0
    )?;
    writeln!(out, "  edge accuracy (relative overlap): {:.2}%", all.relative_overlap * 100.0)?;
    writeln!(out, "  edge accuracy (absolute overlap): {:.2}%", all.absolute_overlap * 100.0)?;
    let mut rows: Vec<(Accuracy, String)> = exact
        .functions
        .iter()
        .map(|f| (compare_functions([f], &sampled.functions, threshold), function_label(f)))
        .filter(|(a, _)| a.flow > 0.0)
        .collect();
    rows.sort_by(|a, b| b.0.flow.total_cmp(&a.0.flow));
    writeln!(out)?;
    writeln!(out, "{:<32} {:>7} {:>9} {:>9} {:>9}", "function", "flow", "paths", "relative", "absolute")?;
    for (a, name) in rows.iter().take(top) {
        writeln!(
            out,
            "{:<32} {:>6.2}% {:>8.2}% {:>8.2}% {:>8.2}%",
            truncate(name, 32),
            100.0 * a.flow / all.flow.max(f64::MIN_POSITIVE),
            a.paths * 100.0,
            a.relative_overlap * 100.0,
            a.absolute_overlap * 100.0
        )?;
    }
    Ok(())
}
