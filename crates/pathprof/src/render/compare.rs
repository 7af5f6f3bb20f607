//! The accuracy of a sampled profile against an exact one [PEP05 §6.3–6.4], over the whole program
//! and for the functions with the most branch flow.

use super::{group, truncate};
use crate::view::function_label;
use anyhow::Result;
use pathprof_core::accuracy::{compare_functions, compare_sequences, Accuracy};
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
    if let (Some(e), Some(s)) = (exact.mode.kbl(), sampled.mode.kbl()) {
        let k = e.k.min(s.k);
        if let Some(b) = &s.bursts {
            writeln!(
                out,
                "  {} bursts of {} ms every {} ms streamed {:.2}% of the path ends",
                group(b.opened.0),
                b.ms,
                b.every_ms,
                100.0 * b.streamed_share()
            )?;
        }
        if e.k != s.k {
            writeln!(out, "  k-iteration paths: forests of k = {} and k = {}, not compared", e.k, s.k)?;
        } else {
            let seq = compare_sequences(&exact.functions, &sampled.functions, threshold);
            writeln!(
                out,
                "  hot {k}-path coverage (hot above {:.3}% of {k}-path executions): {:.2}% ({} of {} hot {k}-paths)",
                threshold * 100.0,
                seq.coverage * 100.0,
                group(seq.covered as u64),
                group(seq.hot as u64)
            )?;
            writeln!(
                out,
                "  {k}-path accuracy (weight matching by frequency): {:.2}% ({} against {} {k}-path executions)",
                seq.weight_matching * 100.0,
                group(seq.sampled_executions),
                group(seq.exact_executions)
            )?;
        }
    }
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
