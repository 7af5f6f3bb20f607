//! The table of `pathprof bench`: a row per program, a line of details under it, and the summaries
//! over the programs (docs/PERFORMANCE.md).

use super::truncate;
use crate::bench::{AccuracyRange, BenchReport, ProgramFigures, MIN_TIMED_SECONDS};
use anyhow::Result;
use std::collections::BTreeMap;
use std::io::Write;

/// Header of the `bench` table.
pub fn header(out: &mut impl Write, labels: &[String]) -> Result<()> {
    write!(out, "{:<40} {:>5} {:>10} {:>6}", "program", "runs", "none ms", "±")?;
    for m in labels {
        write!(
            out,
            " | {:>10} {:>6} {:>6} {:>8} {:>8} {:>7} {:>6} {:>9}",
            format!("{m} ms"),
            "±",
            "ratio",
            "instr ms",
            "comp ms",
            "compile",
            "code",
            "mem KiB"
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// One program's row of the `bench` table.
pub fn row(out: &mut impl Write, p: &ProgramFigures) -> Result<()> {
    write!(
        out,
        "{:<40} {:>5} {:>10.3} {:>5.1}%",
        truncate(&p.program, 40),
        p.none_runs,
        p.none_median_seconds * 1e3,
        p.none_spread * 100.0
    )?;
    // Ratios of an untimed region are marked: the summary leaves them out.
    let mark = if p.timed { ' ' } else { '*' };
    for m in &p.modes {
        write!(
            out,
            " | {:>10.3} {:>5.1}% {:>6.3}{mark}{:>8.1} {:>8.1} {:>6.2}x {:>5.2}x {:>9.1}",
            m.median_seconds * 1e3,
            m.spread * 100.0,
            m.ratio,
            m.instrumentation_seconds * 1e3,
            m.compile_seconds * 1e3,
            m.compile_ratio,
            m.code_growth,
            m.profiler_memory_bytes as f64 / 1024.0
        )?;
    }
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Corpus-wide ratios; `timed_from` is the shortest bench region they take.
pub fn summary(out: &mut impl Write, r: &BenchReport, timed_from: f64) -> Result<()> {
    for s in &r.summary {
        writeln!(
            out,
            "{}: geometric mean ratio {:.3}, maximum {:.3} ({}) over {} programs",
            s.mode, s.geomean_ratio, s.max_ratio, s.max_program, s.programs
        )?;
    }
    let untimed: Vec<&str> = r.programs.iter().filter(|p| !p.timed).map(|p| p.program.as_str()).collect();
    if !untimed.is_empty() {
        let why = if timed_from > MIN_TIMED_SECONDS {
            format!("under {timed_from} s, --min-seconds")
        } else {
            format!("under {:.0} µs, too short to time", timed_from * 1e6)
        };
        writeln!(out, "left out (uninstrumented bench region {why}): {}", untimed.join(", "))?;
    }
    Ok(())
}

/// What the table rows leave out, as a line under a program's row (nothing when there is nothing to
/// add): each mode's median over `bl`'s, the figures modes give of their runs (a `kbl` mode's
/// k-slab-forest nodes), and each sampled mode's accuracy.
pub fn details(out: &mut impl Write, p: &ProgramFigures) -> Result<()> {
    let vs_bl: Vec<String> = p.modes.iter().filter_map(|m| Some(format!("{} {:.3}", m.mode, m.vs_bl?))).collect();
    // Each figure's values over the modes that give it, in the order of the labels.
    let mut figures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for m in &p.modes {
        for (key, value) in &m.figures {
            figures.entry(m.figure_labels[key]).or_default().push(format!("{} {value}", m.mode));
        }
    }
    let accuracy: Vec<String> = p
        .modes
        .iter()
        .filter_map(|m| {
            let a = m.accuracy?;
            Some(format!(
                "{} {:.2} / {:.2} / {:.2}",
                m.mode,
                a.paths * 100.0,
                a.relative_overlap * 100.0,
                a.absolute_overlap * 100.0
            ))
        })
        .collect();
    let mut parts = Vec::new();
    if !vs_bl.is_empty() {
        parts.push(format!("vs bl: {}", vs_bl.join(", ")));
    }
    for (label, values) in &figures {
        parts.push(format!("{label}: {}", values.join(", ")));
    }
    if !accuracy.is_empty() {
        parts.push(format!("accuracy (paths / relative / absolute overlap, %): {}", accuracy.join(", ")));
    }
    if !parts.is_empty() {
        writeln!(out, "{:<40} {}", "", parts.join("; "))?;
        out.flush()?;
    }
    Ok(())
}

/// The corpus-wide ratios over `bl` and the accuracy of sampled modes, one line per mode that has them.
pub fn summary_vs_bl(out: &mut impl Write, r: &BenchReport) -> Result<()> {
    for s in &r.summary {
        if let Some(v) = &s.vs_bl {
            writeln!(
                out,
                "{} against bl: geometric mean ratio {:.3}, maximum {:.3} ({})",
                s.mode, v.geomean, v.max, v.max_program
            )?;
        }
    }
    for s in &r.summary {
        if let Some(a) = &s.accuracy {
            let range = |name: &str, r: &AccuracyRange| {
                format!("{name} mean {:.2} %, lowest {:.2} % ({})", r.mean * 100.0, r.min * 100.0, r.min_program)
            };
            writeln!(
                out,
                "{} accuracy: {}; {}; {}",
                s.mode,
                range("path accuracy", &a.paths),
                range("relative overlap", &a.relative_overlap),
                range("absolute overlap", &a.absolute_overlap)
            )?;
        }
    }
    Ok(())
}
