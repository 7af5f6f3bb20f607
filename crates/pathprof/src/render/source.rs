//! Hot paths as the source lines they run, with the lines' text (`report --source`).

use super::{group, group_wide, share};
use crate::source::{path_steps, SourceFiles};
use crate::view::{function_label, hottest, path_cost, total_cost, Rank};
use anyhow::Result;
use pathprof_core::profile::Profile;
use std::collections::BTreeSet;
use std::io::Write;

/// Prints the `top` hot paths by `rank`, each as the source lines it runs.
pub fn text(
    out: &mut impl Write,
    p: &Profile,
    top: usize,
    function: Option<&str>,
    rank: Rank,
    files: &mut SourceFiles,
) -> Result<()> {
    let by = rank.measure();
    writeln!(out, "pathprof: hot paths of {} ({}) by {by}, as source", p.module.path, p.mode)?;
    let hot = hottest(p, top, function, rank);
    if hot.is_empty() {
        writeln!(out, "  no path ran")?;
        return Ok(());
    }
    let (operators, executions) = (total_cost(p), p.path_executions.0);
    let mut missing: BTreeSet<String> = BTreeSet::new();
    for (n, (f, path)) in hot.iter().enumerate() {
        let cost = path_cost(f, path);
        writeln!(out)?;
        writeln!(
            out,
            "#{} {} path {} ({}→{}): {} runs ({:.2}%), {} operators ({:.2}%)",
            n + 1,
            function_label(f),
            path.id,
            path.start,
            path.end,
            group(path.count.0),
            share(u128::from(path.count.0), u128::from(executions)),
            group_wide(cost),
            share(cost, operators),
        )?;
        let steps = path_steps(f, path);
        if steps.is_empty() {
            writeln!(out, "    (no source lines: blocks {})", super::block_list(&path.blocks).join(" "))?;
            continue;
        }
        let width = steps.iter().map(|s| place(&s.file, s.line).chars().count()).max().unwrap_or(0);
        for step in &steps {
            let at = place(&step.file, step.line);
            let text = step.line.and_then(|l| files.line(&step.file, l));
            match text {
                Some(text) => writeln!(out, "    {at:<width$} | {}", text.trim_end())?,
                None => {
                    if files.file(&step.file).is_none() {
                        missing.insert(step.file.clone());
                    }
                    writeln!(out, "    {at}")?
                }
            }
        }
    }
    if !missing.is_empty() {
        writeln!(out)?;
        let list: Vec<&str> = missing.iter().map(String::as_str).take(5).collect();
        let more = if missing.len() > 5 { format!(" and {} more", missing.len() - 5) } else { String::new() };
        writeln!(out, "source files not found (see --source-root): {}{more}", list.join(", "))?;
    }
    Ok(())
}

/// `file:line`, or `file` without a line.
pub fn place(file: &str, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{file}:{l}"),
        None => file.to_string(),
    }
}
