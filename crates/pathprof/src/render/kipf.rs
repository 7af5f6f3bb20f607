//! A `kbl` profile's k-iteration path forests as text: how they were built, their shape
//! [KBL13 Figs. 11–14] and the hottest sequences of paths, each path expanded to its blocks and
//! source lines.

use super::{group, truncate};
use crate::view::{function_label, hottest_sequences, kipf_k, program_stats, shown_functions, source_lines};
use anyhow::Result;
use pathprof_core::profile::{FunctionProfile, KipfStats, Profile, U64};
use std::io::Write;

/// Path `id` of `f`: its endpoints, blocks and source lines, as in
/// `path 3 [entry→B1]: B0 B2 B5 (foo.c:12-14)`.
fn describe_path(f: &FunctionProfile, id: U64) -> String {
    let Some(path) = f.paths().iter().find(|p| p.id == id) else {
        return format!("path {id}: not among the function's paths");
    };
    let blocks = super::block_list(&path.blocks);
    let mut s = format!("path {id} [{}→{}]: {}", path.start, path.end, blocks.join(" "));
    if let Some(lines) = source_lines(f, &path.blocks) {
        s.push_str(&format!(" ({lines})"));
    }
    s
}

fn stats_row(out: &mut impl Write, label: &str, s: &KipfStats) -> Result<()> {
    let avg = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
    writeln!(
        out,
        "  {:<32}  {:>9}  {:>11}  {:>9}  {:>10}  {:>9}  {:>14}",
        truncate(label, 32),
        group(s.roots()),
        group(s.nodes),
        group(s.internal_nodes),
        avg(s.avg_degree()),
        group(s.leaves),
        avg(s.avg_leaf_depth())
    )?;
    Ok(())
}

/// Mode `kbl`: how the forests were built, their shape [KBL13 Figs. 11–14] and the hottest
/// sequences of 2 to k paths, each path expanded to its blocks and source lines. Prints nothing for a
/// profile without k-iteration path forests.
pub fn text(out: &mut impl Write, p: &Profile, top: usize, function: Option<&str>) -> Result<()> {
    let Some(k) = kipf_k(p) else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(out, "k-iteration paths (k = {k})")?;
    if let Some(kbl) = p.mode.kbl() {
        writeln!(
            out,
            "  k-SF: {} nodes of {} bytes ({:.1} KiB), {} stream items, {} sibling scans ({:.2} per path)",
            group(kbl.ksf_nodes.0),
            kbl.ksf_node_bytes,
            kbl.ksf_nodes.0 as f64 * f64::from(kbl.ksf_node_bytes) / 1024.0,
            group(kbl.stream_items.0),
            group(kbl.sibling_scans.0),
            kbl.sibling_scans.0 as f64 / p.path_executions.0.max(1) as f64
        )?;
        if let Some(b) = &kbl.bursts {
            let window = if b.ms >= b.every_ms {
                "one burst for the whole run".to_string()
            } else {
                format!("{} bursts of {} ms every {} ms", group(b.opened.0), b.ms, b.every_ms)
            };
            writeln!(
                out,
                "  bursts: {window}; {} of {} path ends streamed ({:.2} %): root counts are exact, sequences of 2 or more paths are those that ran during bursts",
                group(b.streamed_path_ends.0),
                group(b.path_ends.0),
                100.0 * b.streamed_share()
            )?;
        }
        if kbl.stream_handovers.0 > 0 {
            writeln!(
                out,
                "  stream: {} buffers handed to {}; the program waited {:.3} s for it ({:.1} % of the run)",
                group(kbl.stream_handovers.0),
                match kbl.fold_threads {
                    1 => "the consumer thread".to_string(),
                    n => format!("{n} consumer threads, each building its share of the trees"),
                },
                kbl.stream_wait_seconds,
                100.0 * kbl.stream_wait_seconds / p.wall_seconds.max(f64::MIN_POSITIVE)
            )?;
        }
        let bound = kbl.max_nodes.map(|m| format!("bound of {} k-SF nodes", group(m.0)));
        match (bound, kbl.dropped.0) {
            (Some(b), 0) => writeln!(out, "  {b} not reached: every count is exact")?,
            (b, dropped) if dropped > 0 => writeln!(
                out,
                "  {}: {} counts pruned; root counts are exact, deeper counts are lower bounds (short by at most {}, bounds shown as count–most)",
                b.unwrap_or_else(|| "node bound".to_string()),
                group(dropped),
                group(dropped)
            )?,
            _ => {}
        }
    }
    let hot = hottest_sequences(p, top, function);
    writeln!(
        out,
        "  {:<32}  {:>9}  {:>11}  {:>9}  {:>10}  {:>9}  {:>14}",
        "forest", "BL paths", "k-IPF nodes", "internal", "avg degree", "leaves", "avg leaf depth"
    )?;
    stats_row(out, "whole program", &program_stats(p))?;
    for f in shown_functions(p, function, &hot) {
        if let Some(kipf) = f.kipf() {
            stats_row(out, &function_label(f), &kipf.stats())?;
        }
    }
    writeln!(out)?;
    if hot.is_empty() {
        writeln!(out, "  no sequence of 2 or more paths ran")?;
        return Ok(());
    }
    writeln!(out, "hottest sequences of 2 to {k} paths")?;
    writeln!(out, "{:>4}  {:>15}  paths", "#", "count")?;
    // Functions in the order of their hottest sequence, each with its sequences and then its paths.
    let mut functions: Vec<&FunctionProfile> = Vec::new();
    for s in &hot {
        if !functions.iter().any(|f| f.index == s.function.index) {
            functions.push(s.function);
        }
    }
    for f in functions {
        writeln!(out, "{}", function_label(f))?;
        let mut legend: Vec<U64> = Vec::new();
        for (rank, s) in hot.iter().enumerate().filter(|(_, s)| s.function.index == f.index) {
            let ids: Vec<String> = s.paths.iter().map(|id| id.to_string()).collect();
            // Under a node bound, the count and the most it can be.
            let bound = f.kipf().and_then(|k| k.node(&s.paths)).and_then(|n| n.max);
            let count = bound.map_or_else(|| group(s.count), |m| format!("{}–{}", group(s.count), group(m.0)));
            writeln!(out, "{:>4}  {:>15}  {}", rank + 1, count, ids.join(" → "))?;
            legend.extend(&s.paths);
        }
        legend.sort_unstable();
        legend.dedup();
        for id in legend {
            writeln!(out, "{:>23}{}", "", describe_path(f, id))?;
        }
    }
    Ok(())
}
