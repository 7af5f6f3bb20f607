//! The untested paths of a `ppp` profile [PPP07 §3.5]: the columns of [PPP07 Table 3.1] for the
//! run, then every untested path with its function, count, blocks and source lines, as text or JSON.

use super::group;
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
