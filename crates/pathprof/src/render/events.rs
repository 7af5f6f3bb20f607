//! The events of an `events` profile [EVT23]: the totals with how far they can be off, the table of
//! every function's events, and the paths ranked by one event (`report --by EVENT`), as text or
//! JSON.

use super::{group, truncate};
use crate::view::{function_label, functions_by_event, hottest_by_event, source_lines};
use anyhow::Result;
use pathprof_core::profile::{EventCounts, EventStrategy, Profile};
use std::io::Write;

/// `n` in at most five characters: `987`, `12.3k`, `4.14M`, `108G`.
fn compact(n: u64) -> String {
    if n < 1000 {
        return n.to_string();
    }
    let mut x = n as f64;
    for unit in ["k", "M", "G", "T", "P", "E"] {
        x /= 1000.0;
        if x < 999.5 {
            return match x {
                x if x < 9.995 => format!("{x:.2}{unit}"),
                x if x < 99.95 => format!("{x:.1}{unit}"),
                x => format!("{x:.0}{unit}"),
            };
        }
    }
    n.to_string()
}

/// The totals and how the events were counted.
pub fn summary(out: &mut impl Write, p: &Profile) -> Result<()> {
    let Some(info) = p.mode.events() else { return Ok(()) };
    match info.strategy {
        EventStrategy::Dec => writeln!(out, "  events counted by dec (no paths)")?,
        s => writeln!(out, "  events counted by {} (paths cut: {})", s.name(), info.cut.name())?,
    }
    let bound = |b: &Option<EventCounts>, name: &str| b.as_ref().and_then(|b| b.get(name)).filter(|&x| x > 0);
    for (name, total) in &info.totals.0 {
        let mut line = format!("    {name:<16} {:>20}", group(total.0));
        if let Some(x) = bound(&info.undercount_bound, name) {
            line.push_str(&format!("  (up to {} more on paths cut short)", group(x)));
        }
        if let Some(x) = bound(&info.overcount_bound, name) {
            line.push_str(&format!("  (up to {} fewer: counted in the stretch that trapped)", group(x)));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The table of the `top` functions by the event at `index`: every event that occurred, a column
/// each.
pub fn functions(out: &mut impl Write, p: &Profile, index: usize, top: usize, function: Option<&str>) -> Result<()> {
    let Some(info) = p.mode.events() else { return Ok(()) };
    // The events that occurred, the ranking one first.
    let mut columns: Vec<usize> = vec![index];
    columns.extend((0..info.names.len()).filter(|&j| j != index && info.totals.0[j].1 .0 > 0));
    let shown = functions_by_event(p, index, function);
    writeln!(out)?;
    writeln!(out, "functions by {}", info.names[index])?;
    let mut header = format!("{:>4}  {:<32}", "#", "function");
    for &j in &columns {
        header.push_str(&format!(" {:>13}", truncate(&info.names[j], 13)));
    }
    writeln!(out, "{header}")?;
    for (rank, f) in shown.iter().take(top).enumerate() {
        let e = f.events().expect("functions with events");
        let mut line = format!("{:>4}  {:<32}", rank + 1, truncate(&function_label(f), 32));
        for &j in &columns {
            line.push_str(&format!(" {:>13}", compact(e.0[j].1 .0)));
        }
        writeln!(out, "{line}")?;
    }
    if shown.len() > top {
        writeln!(out, "  ({} more functions)", shown.len() - top)?;
    }
    Ok(())
}

/// The `top` paths on which the event at `index` occurred most.
pub fn paths(out: &mut impl Write, p: &Profile, index: usize, top: usize, function: Option<&str>) -> Result<()> {
    let Some(info) = p.mode.events() else { return Ok(()) };
    let name = &info.names[index];
    if p.functions.iter().all(|f| f.paths().is_empty()) {
        writeln!(out)?;
        writeln!(out, "no paths: a {} profile counts events only (paths come with strategy pc)", info.strategy.name())?;
        return Ok(());
    }
    let total = info.totals.0[index].1 .0.max(1) as f64;
    let hot = hottest_by_event(p, index, top, function);
    writeln!(out)?;
    writeln!(out, "paths by {name}")?;
    writeln!(
        out,
        "{:>4}  {:>7}  {:>12}  {:>12}  {:<32} {:>6}  {:<13} blocks",
        "#",
        "share",
        truncate(name, 12),
        "count",
        "function",
        "path",
        "start→end"
    )?;
    for (rank, (f, path, events)) in hot.iter().enumerate() {
        writeln!(
            out,
            "{:>4}  {:>6.2}%  {:>12}  {:>12}  {}",
            rank + 1,
            100.0 * *events as f64 / total,
            compact(*events),
            compact(path.count.0),
            super::path_columns(f, path)
        )?;
        if let Some(lines) = source_lines(f, &path.blocks) {
            writeln!(out, "{:>80}{lines}", "")?;
        }
    }
    Ok(())
}

/// `report --by EVENT --json`: the paths ranked by the event and every function's events.
pub fn json(out: &mut impl Write, p: &Profile, index: usize, top: usize, function: Option<&str>) -> Result<()> {
    let Some(info) = p.mode.events() else { return Ok(()) };
    let paths: Vec<serde_json::Value> = hottest_by_event(p, index, top, function)
        .into_iter()
        .map(|(f, path, events)| {
            serde_json::json!({
                "function": f.index,
                "name": f.name,
                "id": path.id,
                "count": path.count,
                "events": events,
                "start": path.start,
                "end": path.end,
                "blocks": path.blocks,
                "lines": source_lines(f, &path.blocks),
            })
        })
        .collect();
    let functions: Vec<serde_json::Value> = functions_by_event(p, index, function)
        .into_iter()
        .map(|f| serde_json::json!({"function": f.index, "name": f.name, "events": f.events()}))
        .collect();
    let doc = serde_json::json!({
        "module": p.module.path,
        "event": info.names[index],
        "strategy": info.strategy,
        "cut": info.cut,
        "events": info.totals,
        "undercount_bound": info.undercount_bound,
        "overcount_bound": info.overcount_bound,
        "paths": paths,
        "functions": functions,
    });
    writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn compact_numbers_keep_three_digits() {
        let got: Vec<String> = [0, 999, 1000, 12_345, 999_499, 999_500, 4_141_610, 108_918_038, u64::MAX]
            .into_iter()
            .map(compact)
            .collect();
        assert_eq!(got, ["0", "999", "1.00k", "12.3k", "999k", "1.00M", "4.14M", "109M", "18.4E"]);
    }
}
