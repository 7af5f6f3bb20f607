//! The untested paths of a `ppp` profile [PPP07 §3.5]: the columns of [PPP07 Table 3.1] for the
//! run, then every untested path with its function, count, blocks and source lines, as text or JSON;
//! and the untested segments of an `ips` profile [PPP07 §3.5.2]: the columns of [PPP07 Table 3.2],
//! then every untested segment with its subpaths.

use super::group;
use crate::modes::ips::{IpsStep, UntestedSegments};
use crate::view::{source_lines, Untested};
use anyhow::Result;
use pathprof_core::profile::Profile;
use std::io::Write;

/// Prints the run's figures and the untested paths, `top` of them at most.
pub fn text(out: &mut impl Write, p: &Profile, u: &Untested, top: usize) -> Result<()> {
    let from = p.mode.ppp().map_or_else(String::new, |i| i.interesting_from.join(", "));
    writeln!(out, "pathprof: untested paths of {} (interesting paths from {from})", p.module.path)?;
    let pct = |x: f64| format!("{:.2}%", 100.0 * x);
    let without = if u.paths > 0 { pct(u.paths_without_untested_edges as f64 / u.paths as f64) } else { pct(0.0) };
    let rows = [
        ("untested paths", group(u.paths)),
        ("% untested paths", pct(u.paths_share)),
        ("% executions on untested paths", pct(u.executions_share)),
        ("functions with untested paths", group(u.functions_with_untested_paths)),
        ("untested edges", group(u.untested_edges)),
        ("functions with untested edges", group(u.functions_with_untested_edges)),
        ("untested paths in functions with no untested edge", group(u.paths_without_untested_edges)),
        ("% untested paths in functions with no untested edge", without),
    ];
    for (what, value) in rows {
        writeln!(out, "  {what:<52} {value:>12}")?;
    }
    if u.list.is_empty() {
        writeln!(out, "  no untested path ran")?;
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "{:>4}  {:>15}  {:<32} {:>6}  {:<13} blocks", "#", "count", "function", "path", "start→end")?;
    for (rank, (f, path)) in u.list.iter().take(top).enumerate() {
        writeln!(out, "{:>4}  {:>15}  {}", rank + 1, group(path.count.0), super::path_columns(f, path))?;
        if let Some(lines) = source_lines(f, &path.blocks) {
            writeln!(out, "{:>23}{lines}", "")?;
        }
    }
    if u.list.len() > top {
        writeln!(out, "  … {} more (--top)", u.list.len() - top)?;
    }
    Ok(())
}

/// The same as JSON: the figures, and the untested paths with their blocks and source lines.
pub fn json(out: &mut impl Write, u: &Untested, top: usize) -> Result<()> {
    let paths: Vec<serde_json::Value> = u
        .list
        .iter()
        .take(top)
        .map(|(f, path)| {
            serde_json::json!({
                "function": f.index,
                "name": f.name,
                "id": path.id,
                "count": path.count,
                "start": path.start,
                "end": path.end,
                "blocks": path.blocks,
                "lines": source_lines(f, &path.blocks),
            })
        })
        .collect();
    let mut doc = serde_json::to_value(u)?;
    if let Some(fields) = doc.as_object_mut() {
        fields.insert("untested".into(), serde_json::Value::Array(paths));
    }
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

/// Prints the figures of the untested segments, then the segments, `top` of them at most.
pub fn segments_text(out: &mut impl Write, p: &Profile, u: &UntestedSegments, top: usize) -> Result<()> {
    let from = crate::modes::ips::facts(&p.mode)?.residual.map_or_else(String::new, |r| r.interesting_from.join(", "));
    writeln!(
        out,
        "pathprof: untested interprocedural path segments of {} (interesting segments from {from})",
        p.module.path
    )?;
    let pct = |x: f64| format!("{:.2}%", 100.0 * x);
    let rows = [
        ("untested segments", group(u.paths)),
        ("% untested segments", pct(u.paths_share)),
        ("% executions on untested segments", pct(u.executions_share)),
        ("functions involved", group(u.functions_involved)),
        ("untested segments of tested paths only", group(u.missed_by_intraprocedural)),
    ];
    for (what, value) in rows {
        writeln!(out, "  {what:<52} {value:>12}")?;
    }
    if u.not_counted_executions > 0 {
        let what = "executions of segments not counted (left out above)";
        writeln!(out, "  {what:<52} {:>12}", group(u.not_counted_executions))?;
    }
    if u.list.is_empty() {
        writeln!(out, "  no untested segment ran")?;
        return Ok(());
    }
    writeln!(out)?;
    for (rank, s) in u.list.iter().take(top).enumerate() {
        let note = if s.untested_path { "" } else { "  (every path tested: intraprocedural RPP misses it)" };
        writeln!(out, "#{:<3} {:>12}{note}", rank + 1, group(s.count.0))?;
        crate::modes::ips::write_steps(out, p, &s.steps)?;
    }
    if u.list.len() > top {
        writeln!(out, "  … {} more (--top)", u.list.len() - top)?;
    }
    Ok(())
}

/// The same as JSON: the figures, and the untested segments with their steps and source lines.
pub fn segments_json(out: &mut impl Write, p: &Profile, u: &UntestedSegments, top: usize) -> Result<()> {
    let segments: Vec<serde_json::Value> = u
        .list
        .iter()
        .take(top)
        .map(|s| {
            let lines: Vec<Option<String>> = s
                .steps
                .iter()
                .filter_map(|x| match x {
                    IpsStep::Sub(sub) => Some(
                        p.functions.iter().find(|f| f.index == sub.function).and_then(|f| source_lines(f, &sub.blocks)),
                    ),
                    IpsStep::Mark(_) => None,
                })
                .collect();
            serde_json::json!({
                "count": s.count,
                "steps": s.steps,
                "lines": lines,
                "untested_path": s.untested_path,
            })
        })
        .collect();
    let mut doc = serde_json::to_value(u)?;
    if let Some(fields) = doc.as_object_mut() {
        fields.insert("untested".into(), serde_json::Value::Array(segments));
    }
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}
