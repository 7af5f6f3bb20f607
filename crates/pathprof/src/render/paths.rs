//! A profile's summary and its hot paths, as text.

use super::{group, truncate};
use anyhow::Result;
use pathprof::view::{function_label, hottest};
use pathprof_core::profile::{Profile, ProfileMode};
use std::io::Write;

/// Prints a summary and the hot paths.
pub fn text(out: &mut impl Write, p: &Profile, top: usize, function: Option<&str>) -> Result<()> {
    let instrumented = p.functions.iter().filter(|f| f.is_instrumented()).count();
    let skipped = p.functions.len() - instrumented;
    let distinct: usize = p.functions.iter().map(|f| f.paths().len()).sum();
    write!(out, "pathprof: {} profile of {}: exit {}", p.mode, p.module.path, p.exit_code)?;
    write!(out, ", wall {:.3} s", p.wall_seconds)?;
    if let Some(b) = p.bench_region_seconds {
        write!(out, ", bench region {b:.3} s")?;
    }
    writeln!(out)?;
    if let Some(t) = &p.trap {
        writeln!(out, "  trap: {t}")?;
    }
    if p.exit_code != 0 || p.trap.is_some() || p.open_activations_at_exit > 0 {
        writeln!(
            out,
            "  activations still open at exit: {} (their current paths are not counted)",
            p.open_activations_at_exit
        )?;
    }
    if p.mode == ProfileMode::None {
        writeln!(out, "  uninstrumented run: no paths")?;
        return Ok(());
    }
    writeln!(
        out,
        "  {instrumented} functions instrumented, {skipped} skipped; {} distinct paths, {} path executions",
        group(distinct as u64),
        group(p.path_executions.0)
    )?;
    let increments: u64 = p.functions.iter().filter_map(|f| f.profiled()).map(|f| u64::from(f.increments)).sum();
    let executed: u64 = p.functions.iter().filter_map(|f| f.profiled()).map(|f| f.increments_executed.0).sum();
    writeln!(
        out,
        "  {} edges carry increments; the counted paths executed {} of them",
        group(increments),
        group(executed)
    )?;
    if let Some(ppp) = p.mode.ppp() {
        writeln!(
            out,
            "  {} interesting paths (from {}); {} residual paths ran, {} times (`report --untested`)",
            group(ppp.interesting.0),
            ppp.interesting_from.join(", "),
            group(ppp.residual_paths.0),
            group(ppp.residual_executions.0)
        )?;
    }
    for f in p.functions.iter() {
        if let Some(reason) = f.skip_reason() {
            writeln!(out, "  skipped {}: {reason}", function_label(f))?;
        }
    }
    let total = p.path_executions.0.max(1) as f64;
    let hot = hottest(p, top, function);
    if hot.is_empty() {
        writeln!(out, "  no path ran")?;
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:>4}  {:>7}  {:>15}  {:<32} {:>6}  {:<13} blocks",
        "#", "share", "count", "function", "path", "start→end"
    )?;
    for (rank, (f, path)) in hot.iter().enumerate() {
        let ends = format!("{}→{}", path.start, path.end);
        let mut blocks: Vec<String> = path.blocks.iter().take(16).map(|b| format!("B{b}")).collect();
        if path.blocks.len() > 16 {
            blocks.push(format!("… ({} more)", path.blocks.len() - 16));
        }
        // Mode `ppp`: a path that is not interesting is residual (untested).
        if path.interesting == Some(false) {
            blocks.push("(untested)".to_string());
        }
        writeln!(
            out,
            "{:>4}  {:>6.2}%  {:>15}  {:<32} {:>6}  {:<13} {}",
            rank + 1,
            100.0 * path.count.0 as f64 / total,
            group(path.count.0),
            truncate(&function_label(f), 32),
            format!("#{}", path.id),
            ends,
            blocks.join(" ")
        )?;
        let lines: Vec<String> = path
            .blocks
            .iter()
            .filter_map(|&b| f.blocks.get(b as usize).and_then(|info| info.line.as_ref().map(|l| format!("B{b} {l}"))))
            .collect();
        if !lines.is_empty() {
            writeln!(out, "{:>70}{}", "", lines.join(", "))?;
        }
    }
    super::kipf::text(out, p, top, function)
}
