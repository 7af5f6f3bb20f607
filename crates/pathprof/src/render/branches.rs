//! A profile's two-way branches: the most biased, and the most evenly split, with their source
//! lines (`report --branches`).

use super::{group, truncate};
use crate::hint::Branch;
use crate::view::{function_label, source_lines};
use anyhow::Result;
use std::io::Write;

/// Prints the two lists of branches.
pub fn text(out: &mut impl Write, module: &str, biased: &[Branch], even: &[Branch]) -> Result<()> {
    writeln!(out, "pathprof: branches of {module}")?;
    for (title, list) in [("most biased (mark likely or cold)", biased), ("most evenly split", even)] {
        writeln!(out)?;
        writeln!(out, "{title}")?;
        writeln!(
            out,
            "{:>4}  {:<32} {:>7} {:>15} {:>7}  {:<8} source",
            "#", "function", "offset", "executions", "taken", "op"
        )?;
        if list.is_empty() {
            writeln!(out, "  none")?;
        }
        for (rank, b) in list.iter().enumerate() {
            let op = b.site.op.name();
            writeln!(
                out,
                "{:>4}  {:<32} {:>7} {:>15} {:>6.1}%  {:<8} {}",
                rank + 1,
                truncate(&function_label(b.function), 32),
                b.site.offset,
                group(b.counts.total()),
                100.0 * b.counts.taken_share(),
                op,
                source_lines(b.function, &[b.site.block]).unwrap_or_default()
            )?;
        }
    }
    Ok(())
}
