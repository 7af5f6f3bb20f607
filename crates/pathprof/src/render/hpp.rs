//! The figures of `pathprof hpp`: the run, the path stack, each table's overlap and hits, the branch
//! queue's cost, and a sweep's table and plot.

use crate::hpp::{HppReport, HppRun};
use pathprof_core::hpp::TableReport;
use std::io::{self, Write};

fn table_line(t: &TableReport) -> String {
    format!(
        "{:>6} entries {:>2}-way {}: complete overlap {:6.2} %, dynamic {:6.2} %, hit rate {:6.2} %, {} entries used",
        t.config.entries,
        t.config.ways,
        t.config.replacement.name(),
        t.complete_overlap,
        t.dynamic_overlap,
        100.0 * t.stats.hit_rate(),
        t.used,
    )
}

/// The summary of a simulated run.
pub fn text(w: &mut dyn Write, app: &str, hpp: &HppRun) -> io::Result<()> {
    let r = &hpp.report;
    let o = &hpp.settings.simulator;
    write!(w, "hpp: {app}, exit code {}", hpp.outcome.exit_code)?;
    match hpp.outcome.stopped {
        Some(reason) => writeln!(w, ", stopped ({}) before the program ended", reason.name())?,
        None => writeln!(w)?,
    }
    writeln!(
        w,
        "  {} branches, {} instructions, {} paths ({} distinct), {} windows of {} instructions",
        r.stack.branches, r.instructions, r.stack.paths, r.distinct_paths, r.windows, o.window
    )?;
    let extend = match o.extend {
        None => "none".to_string(),
        Some(pathprof_core::hpp::Extend::Loops(n)) => format!("loops:{n}"),
        Some(pathprof_core::hpp::Extend::Calls(n)) => format!("calls:{n}"),
    };
    writeln!(
        w,
        "  mapping {}, extension {extend}, metric {}, paths of at most {} branches ({} split), stack {} (deepest {}, {} overflows)",
        o.mapping.name(),
        o.metric.name(),
        o.max_length,
        r.stack.splits,
        o.stack_capacity.map_or("unbounded".to_string(), |c| format!("of {c}")),
        r.stack.deepest,
        r.stack.overflows,
    )?;
    if let Some(t) = r.tables.first() {
        writeln!(w, "  {} ({} bytes)", table_line(t), t.config.bytes())?;
    }
    writeln!(
        w,
        "  branch queue of {}: {:.0} stall cycles over {:.0} cycles at {} instructions per cycle ({:.3} %)",
        o.queue,
        r.queue.stall_cycles,
        r.queue.program_cycles(),
        o.ipc,
        100.0 * r.queue.overhead()
    )?;
    let t = &r.trace;
    writeln!(
        w,
        "  trace: {} items, simulated in {:.2} s ({:.1} M branches/s); instrumented in {:.2} s; run {:.2} s",
        t.items,
        t.simulation_seconds,
        if t.simulation_seconds > 0.0 { r.stack.branches as f64 / t.simulation_seconds / 1e6 } else { 0.0 },
        hpp.instrumentation_seconds,
        hpp.outcome.wall_seconds,
    )?;
    if t.unmatched_calls + t.stray_items + t.open_activations + r.open_paths as u64 > 0 {
        writeln!(
            w,
            "  {} calls matched no call site, {} items ignored, {} activations and {} paths open at the end",
            t.unmatched_calls, t.stray_items, t.open_activations, r.open_paths
        )?;
    }
    Ok(())
}

/// Every table of a sweep.
pub fn sweep(w: &mut dyn Write, r: &HppReport) -> io::Result<()> {
    writeln!(w, "sweep:")?;
    for t in r.tables.iter().skip(1) {
        writeln!(w, "  {}", table_line(t))?;
    }
    Ok(())
}

/// A plot of the sweep: complete overlap against table size, a line per associativity.
pub fn svg(r: &HppReport) -> String {
    let tables = &r.tables[1.min(r.tables.len())..];
    let mut sizes: Vec<u32> = tables.iter().map(|t| t.config.entries).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut ways: Vec<u32> = tables.iter().map(|t| t.config.ways).collect();
    ways.sort_unstable();
    ways.dedup();
    let (w, h, left, right, top, bottom) = (640.0, 400.0, 60.0, 120.0, 30.0, 50.0);
    let x = |size: u32| {
        let i = sizes.iter().position(|&s| s == size).unwrap_or(0) as f64;
        left + i * (w - left - right) / (sizes.len().max(2) - 1) as f64
    };
    let y = |pct: f64| top + (100.0 - pct.clamp(0.0, 100.0)) * (h - top - bottom) / 100.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"18\">Complete overlap (%) against Hot Path Table entries</text>\n"
    );
    for pct in (0..=100).step_by(20) {
        let yy = y(f64::from(pct));
        s += &format!(
            "<line x1=\"{left}\" y1=\"{yy}\" x2=\"{}\" y2=\"{yy}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{pct}</text>\n",
            w - right,
            left - 6.0,
            yy + 4.0
        );
    }
    for &size in &sizes {
        s += &format!("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{size}</text>\n", x(size), h - bottom + 18.0);
    }
    const COLOURS: [&str; 6] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
    for (i, &wy) in ways.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = tables
            .iter()
            .filter(|t| t.config.ways == wy)
            .map(|t| format!("{:.1},{:.1}", x(t.config.entries), y(t.complete_overlap)))
            .collect();
        s += &format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            points.join(" ")
        );
        let ly = top + 20.0 * i as f64;
        s += &format!(
            "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">{wy}-way</text>\n",
            w - right + 10.0,
            w - right + 30.0,
            w - right + 35.0,
            ly + 4.0
        );
    }
    s += "</svg>\n";
    s
}

/// The figures as JSON.
pub fn json(hpp: &HppRun) -> String {
    let r = &hpp.report;
    let o = &hpp.settings.simulator;
    let tables: Vec<serde_json::Value> = r
        .tables
        .iter()
        .map(|t| {
            serde_json::json!({
                "entries": t.config.entries,
                "ways": t.config.ways,
                "replacement": t.config.replacement.name(),
                "bytes": t.config.bytes(),
                "complete_overlap": t.complete_overlap,
                "dynamic_overlap": t.dynamic_overlap,
                "hits": t.stats.hits,
                "misses": t.stats.misses,
                "hit_rate": t.stats.hit_rate(),
                "used": t.used,
            })
        })
        .collect();
    let v = serde_json::json!({
        "exit_code": hpp.outcome.exit_code,
        "stopped": hpp.outcome.stopped.map(|r| r.name()),
        "mapping": o.mapping.name(),
        "metric": o.metric.name(),
        "window": o.window,
        "branches": r.stack.branches,
        "instructions": r.instructions,
        "paths": r.stack.paths,
        "distinct_paths": r.distinct_paths,
        "splits": r.stack.splits,
        "stack_overflows": r.stack.overflows,
        "deepest_stack": r.stack.deepest,
        "windows": r.windows,
        "queue": o.queue,
        "stall_cycles": r.queue.stall_cycles,
        "program_cycles": r.queue.program_cycles(),
        "simulation_seconds": r.trace.simulation_seconds,
        "instrumentation_seconds": hpp.instrumentation_seconds,
        "wall_seconds": hpp.outcome.wall_seconds,
        "unmatched_calls": r.trace.unmatched_calls,
        "stray_items": r.trace.stray_items,
        "tables": tables,
    });
    serde_json::to_string_pretty(&v).expect("JSON of numbers and strings") + "\n"
}
