//! Terminal and JSON reports of hot paths.

use anyhow::Result;
use pathprof_core::accuracy::{compare_functions, Accuracy};
use pathprof_core::profile::{FunctionProfile, PathCount, Profile};
use serde::Serialize;
use std::io::Write;

/// Whether `f` is the function named `sel` (by name, or by index).
pub fn matches(f: &FunctionProfile, sel: &str) -> bool {
    f.name.as_deref() == Some(sel) || sel.parse::<u32>().is_ok_and(|i| i == f.index)
}

fn function_label(f: &FunctionProfile) -> String {
    match &f.name {
        Some(n) => format!("{n} [{}]", f.index),
        None => format!("func[{}]", f.index),
    }
}

/// The `top` hottest paths, over all functions or only `function`.
fn hottest<'a>(p: &'a Profile, top: usize, function: Option<&str>) -> Vec<(&'a FunctionProfile, &'a PathCount)> {
    let mut all: Vec<_> = p
        .functions
        .iter()
        .filter(|f| function.is_none_or(|sel| matches(f, sel)))
        .flat_map(|f| f.paths.iter().map(move |path| (f, path)))
        .collect();
    all.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.index.cmp(&b.0.index)).then(a.1.id.cmp(&b.1.id)));
    all.truncate(top);
    all
}

fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Prints a summary and the hot paths.
pub fn text(out: &mut impl Write, p: &Profile, top: usize, function: Option<&str>) -> Result<()> {
    let instrumented = p.functions.iter().filter(|f| f.instrumented).count();
    let skipped = p.functions.len() - instrumented;
    let distinct: usize = p.functions.iter().map(|f| f.paths.len()).sum();
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
    if p.mode == "none" {
        writeln!(out, "  uninstrumented run: no paths")?;
        return Ok(());
    }
    writeln!(
        out,
        "  {instrumented} functions instrumented, {skipped} skipped; {} distinct paths, {} path executions",
        group(distinct as u64),
        group(p.path_executions.0)
    )?;
    let increments: u64 = p.functions.iter().map(|f| u64::from(f.increments)).sum();
    let executed: u64 = p.functions.iter().map(|f| f.increments_executed.0).sum();
    writeln!(
        out,
        "  {} edges carry increments; the counted paths executed {} of them",
        group(increments),
        group(executed)
    )?;
    for f in p.functions.iter().filter(|f| !f.instrumented) {
        writeln!(out, "  skipped {}: {}", function_label(f), f.skip_reason.as_deref().unwrap_or("unknown reason"))?;
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
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

#[derive(Serialize)]
struct JsonBlock<'a> {
    id: u32,
    offset: u64,
    end: u64,
    line: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonPath<'a> {
    function: u32,
    name: Option<&'a str>,
    id: pathprof_core::profile::U64,
    count: pathprof_core::profile::U64,
    share: f64,
    start: pathprof_core::profile::Endpoint,
    end: pathprof_core::profile::Endpoint,
    blocks: Vec<JsonBlock<'a>>,
}

/// Prints the hot paths as JSON, with every block's byte range and source line.
pub fn json(out: &mut impl Write, p: &Profile, top: usize, function: Option<&str>) -> Result<()> {
    let total = p.path_executions.0.max(1) as f64;
    let paths: Vec<JsonPath> = hottest(p, top, function)
        .into_iter()
        .map(|(f, path)| JsonPath {
            function: f.index,
            name: f.name.as_deref(),
            id: path.id,
            count: path.count,
            share: path.count.0 as f64 / total,
            start: path.start,
            end: path.end,
            blocks: path
                .blocks
                .iter()
                .filter_map(|&b| f.blocks.get(b as usize))
                .map(|b| JsonBlock { id: b.id, offset: b.offset, end: b.end, line: b.line.as_deref() })
                .collect(),
        })
        .collect();
    serde_json::to_writer_pretty(
        &mut *out,
        &serde_json::json!({
            "module": p.module.path,
            "mode": p.mode,
            "path_executions": p.path_executions,
            "paths": paths,
        }),
    )?;
    writeln!(out)?;
    Ok(())
}

/// Header of the `bench` table.
pub fn bench_header(out: &mut impl Write, modes: &[String]) -> Result<()> {
    let modes: Vec<&String> = modes.iter().filter(|m| *m != "none").collect();
    write!(out, "{:<40} {:>5} {:>10} {:>6}", "program", "runs", "none ms", "±")?;
    for m in &modes {
        write!(
            out,
            " | {:>10} {:>6} {:>6} {:>8} {:>7} {:>6} {:>9}",
            format!("{m} ms"),
            "±",
            "ratio",
            "instr ms",
            "compile",
            "code",
            "mem KiB"
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// One program's row of the `bench` table.
pub fn bench_row(out: &mut impl Write, p: &crate::bench::ProgramFigures) -> Result<()> {
    write!(
        out,
        "{:<40} {:>5} {:>10.3} {:>5.1}%",
        truncate(&p.program, 40),
        p.none_runs,
        p.none_median_seconds * 1e3,
        p.none_spread * 100.0
    )?;
    for m in &p.modes {
        write!(
            out,
            " | {:>10.3} {:>5.1}% {:>6.3} {:>8.1} {:>6.2}x {:>5.2}x {:>9.1}",
            m.median_seconds * 1e3,
            m.spread * 100.0,
            m.ratio,
            m.instrumentation_seconds * 1e3,
            m.compile_ratio,
            m.code_growth,
            m.profiler_memory_bytes as f64 / 1024.0
        )?;
    }
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Corpus-wide ratios.
pub fn bench_summary(out: &mut impl Write, r: &crate::bench::BenchReport) -> Result<()> {
    for s in &r.summary {
        writeln!(
            out,
            "{}: geometric mean ratio {:.3}, maximum {:.3} ({}) over {} programs",
            s.mode,
            s.geomean_ratio,
            s.max_ratio,
            s.max_program,
            r.programs.len()
        )?;
    }
    Ok(())
}

/// Path accuracy (Wall weight matching), relative and absolute edge overlap of `sampled` against
/// `exact`, over the whole program and for the functions with the most branch flow.
pub fn compare(out: &mut impl Write, exact: &Profile, sampled: &Profile, threshold: f64, top: usize) -> Result<()> {
    let all = compare_functions(&exact.functions, &sampled.functions, threshold);
    writeln!(out, "{} ({}) against {} ({})", sampled.module.path, sampled.mode, exact.module.path, exact.mode)?;
    if let Some(s) = &sampled.sampling {
        writeln!(out, "  {} samples in {} ticks", group(s.samples_taken), group(s.ticks))?;
    }
    writeln!(
        out,
        "  path accuracy (Wall weight matching, hot above {:.3}% of branch flow): {:.2}%",
        threshold * 100.0,
        all.paths * 100.0
    )?;
    writeln!(out, "  edge accuracy (relative overlap): {:.2}%", all.relative_overlap * 100.0)?;
    writeln!(out, "  edge accuracy (absolute overlap): {:.2}%", all.absolute_overlap * 100.0)?;
    let mut rows: Vec<(Accuracy, String)> = exact
        .functions
        .iter()
        .map(|f| (compare_functions([f], &sampled.functions, threshold), function_label(f)))
        .filter(|(a, _)| a.flow > 0.0)
        .collect();
    rows.sort_by(|a, b| b.0.flow.total_cmp(&a.0.flow));
    writeln!(out)?;
    writeln!(out, "{:<32} {:>7} {:>9} {:>9} {:>9}", "function", "flow", "paths", "relative", "absolute")?;
    for (a, name) in rows.iter().take(top) {
        writeln!(
            out,
            "{:<32} {:>6.2}% {:>8.2}% {:>8.2}% {:>8.2}%",
            truncate(name, 32),
            100.0 * a.flow / all.flow.max(f64::MIN_POSITIVE),
            a.paths * 100.0,
            a.relative_overlap * 100.0,
            a.absolute_overlap * 100.0
        )?;
    }
    Ok(())
}
