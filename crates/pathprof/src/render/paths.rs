//! A profile's summary and its hot paths, as text.

use super::{group, group_wide};
use crate::modes::{Registry, Report};
use crate::view::{function_label, hottest, path_cost, path_ops, total_cost, Rank};
use anyhow::Result;
use pathprof_core::profile::Profile;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::io::Write;

/// Prints a summary, what the profile's mode adds to it (its kind in `registry`), and the hot paths
/// ranked by `rank`, then the functions left uninstrumented.
pub fn text(
    out: &mut impl Write,
    registry: &Registry,
    p: &Profile,
    top: usize,
    function: Option<&str>,
    rank: Rank,
) -> Result<()> {
    summary_and_paths(out, registry, p, top, function, rank)?;
    skipped(out, p)
}

/// Functions named per reason in the list of skipped functions.
const SKIPPED_NAMED: usize = 3;

/// The functions left uninstrumented, counted by reason, with the first few of each.
fn skipped(out: &mut impl Write, p: &Profile) -> Result<()> {
    let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for f in &p.functions {
        if let Some(reason) = f.skip_reason() {
            by_reason.entry(reason).or_default().push(function_label(f));
        }
    }
    if by_reason.is_empty() {
        return Ok(());
    }
    let total: usize = by_reason.values().map(Vec::len).sum();
    // The most frequent reason first; the sort is stable, so equal counts keep the reasons' order.
    let mut reasons: Vec<_> = by_reason.into_iter().collect();
    reasons.sort_by_key(|(_, names)| Reverse(names.len()));
    writeln!(out)?;
    writeln!(out, "skipped functions (not instrumented): {}", group(total as u64))?;
    for (reason, names) in &reasons {
        let more = names.len().saturating_sub(SKIPPED_NAMED);
        let shown = names[..names.len().min(SKIPPED_NAMED)].join(", ");
        let more = if more > 0 { format!(" and {} more", group(more as u64)) } else { String::new() };
        writeln!(out, "  {:>9}  {reason}: {shown}{more}", group(names.len() as u64))?;
    }
    Ok(())
}

fn summary_and_paths(
    out: &mut impl Write,
    registry: &Registry,
    p: &Profile,
    top: usize,
    function: Option<&str>,
    rank: Rank,
) -> Result<()> {
    let instrumented = p.functions.iter().filter(|f| f.is_instrumented()).count();
    let skipped = p.functions.len() - instrumented;
    let distinct: usize = p.functions.iter().map(|f| f.paths().len()).sum();
    write!(out, "pathprof: {} profile of {}", p.mode, p.module.path)?;
    if let Some(m) = crate::profiled::core_module_of(&p.module) {
        write!(out, " (its core module {m})")?;
    }
    write!(out, ": exit {}", p.exit_code)?;
    write!(out, ", wall {:.3} s", p.wall_seconds)?;
    if let Some(b) = p.bench_region_seconds {
        write!(out, ", bench region {b:.3} s")?;
    }
    if p.runs > 1 {
        write!(out, "; {} runs merged (exit and trap of the first)", p.runs)?;
    }
    writeln!(out)?;
    if let Some(t) = &p.trap {
        writeln!(out, "  trap: {t}")?;
    }
    if let Some(s) = &p.stopped {
        writeln!(out, "  stopped ({s}) before the program ended")?;
    }
    if p.exit_code != 0 || p.trap.is_some() || p.stopped.is_some() || p.open_activations_at_exit > 0 {
        writeln!(
            out,
            "  activations still open at exit: {} (their current paths are not counted)",
            p.open_activations_at_exit
        )?;
    }
    if !p.mode.has_probes() {
        writeln!(out, "  uninstrumented run: no paths")?;
        return Ok(());
    }
    let pathless = !p.mode.lists_paths();
    if pathless {
        writeln!(out, "  {instrumented} functions instrumented, {skipped} skipped")?;
    } else {
        writeln!(
            out,
            "  {instrumented} functions instrumented, {skipped} skipped; {} distinct paths, {} path executions",
            group(distinct as u64),
            group(p.path_executions.0)
        )?;
    }
    let increments: u64 = p.functions.iter().filter_map(|f| f.profiled()).map(|f| u64::from(f.increments)).sum();
    // Summed wide: each function's count fits 64 bits, their sum need not.
    let executed: u128 =
        p.functions.iter().filter_map(|f| f.profiled()).map(|f| u128::from(f.increments_executed.0)).sum();
    if !pathless {
        writeln!(
            out,
            "  {} edges carry increments; the counted paths executed {} of them",
            group(increments),
            group_wide(executed)
        )?;
    }
    if let Some(kind) = registry.kind(p.mode.name()) {
        if kind.report(out, p, top, function)? == Report::Done {
            return Ok(());
        }
    }
    let hot = hottest(p, top, function, rank);
    if hot.is_empty() {
        writeln!(out, "  no path ran")?;
        return Ok(());
    }
    let executions = p.path_executions.0.max(1) as f64;
    let operators = total_cost(p);
    let no_ops = operators == 0;
    if rank == Rank::Cost {
        writeln!(out, "  the counted paths executed {} operators", group_wide(operators))?;
        if no_ops {
            writeln!(out, "  this profile has no operator counts per block: paths are ranked by count")?;
        }
    }
    writeln!(out)?;
    match rank {
        Rank::Cost => writeln!(
            out,
            "{:>4}  {:>7}  {:>17}  {:>15}  {:>7}  {:<32} {:>6}  {:<13} blocks",
            "#", "share", "operators", "count", "ops/run", "function", "path", "start→end"
        )?,
        Rank::Count => writeln!(
            out,
            "{:>4}  {:>7}  {:>15}  {:<32} {:>6}  {:<13} blocks",
            "#", "share", "count", "function", "path", "start→end"
        )?,
    }
    for (n, (f, path)) in hot.iter().enumerate() {
        // Mode `ppp`: a path that is not interesting is residual (untested).
        let untested = if path.interesting == Some(false) { " (untested)" } else { "" };
        let columns = super::path_columns(f, path);
        let count = group(path.count.0);
        match rank {
            Rank::Cost => {
                let cost = path_cost(f, path);
                let share = super::share(cost, operators);
                let (cost, ops) = (group_wide(cost), group(path_ops(f, path)));
                writeln!(out, "{:>4}  {share:>6.2}%  {cost:>17}  {count:>15}  {ops:>7}  {columns}{untested}", n + 1)?;
            }
            Rank::Count => {
                let share = 100.0 * path.count.0 as f64 / executions;
                writeln!(out, "{:>4}  {share:>6.2}%  {count:>15}  {columns}{untested}", n + 1)?;
            }
        }
        let lines: Vec<String> = path
            .blocks
            .iter()
            .filter_map(|&b| f.blocks.get(b as usize).and_then(|info| info.line.as_ref().map(|l| format!("B{b} {l}"))))
            .collect();
        if !lines.is_empty() {
            let indent = if rank == Rank::Cost { 98 } else { 70 };
            writeln!(out, "{:>indent$}{}", "", lines.join(", "))?;
        }
    }
    super::kipf::text(out, p, top, function)
}
