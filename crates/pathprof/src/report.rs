//! Terminal and JSON reports of hot paths.

use anyhow::Result;
use pathprof_core::accuracy::{compare_functions, Accuracy};
use pathprof_core::profile::{FunctionProfile, KipfStats, PathCount, Profile, U64};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

/// Whether `f` is the function named `sel` (by name, or by index).
pub fn matches(f: &FunctionProfile, sel: &str) -> bool {
    f.name.as_deref() == Some(sel) || sel.parse::<u32>().is_ok_and(|i| i == f.index)
}

pub(crate) fn function_label(f: &FunctionProfile) -> String {
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
    kipf_text(out, p, top, function)
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

/// The source lines of `blocks` of `f`, compactly: per file (in order of first appearance) its sorted
/// lines with runs merged, as in `foo.c:12-14,20`; `None` when no block has a line.
pub(crate) fn source_lines(f: &FunctionProfile, blocks: &[u32]) -> Option<String> {
    let mut files: Vec<(&str, Vec<u64>)> = Vec::new();
    for line in blocks.iter().filter_map(|&b| f.blocks.get(b as usize).and_then(|info| info.line.as_deref())) {
        let (file, number) = match line.rsplit_once(':').and_then(|(file, n)| Some((file, n.parse::<u64>().ok()?))) {
            Some((file, n)) => (file, Some(n)),
            None => (line, None),
        };
        let at = match files.iter().position(|(f, _)| *f == file) {
            Some(at) => at,
            None => {
                files.push((file, Vec::new()));
                files.len() - 1
            }
        };
        files[at].1.extend(number);
    }
    if files.is_empty() {
        return None;
    }
    let parts: Vec<String> = files
        .into_iter()
        .map(|(file, mut numbers)| {
            numbers.sort_unstable();
            numbers.dedup();
            let mut runs: Vec<(u64, u64)> = Vec::new();
            for n in numbers {
                match runs.last_mut() {
                    Some(run) if run.1.checked_add(1) == Some(n) => run.1 = n,
                    _ => runs.push((n, n)),
                }
            }
            let runs: Vec<String> =
                runs.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
            if runs.is_empty() {
                file.to_string()
            } else {
                format!("{file}:{}", runs.join(","))
            }
        })
        .collect();
    Some(parts.join(", "))
}

/// Path `id` of `f`: its endpoints, blocks and source lines, as in
/// `path 3 [entry→B1]: B0 B2 B5 (foo.c:12-14)`.
fn describe_path(f: &FunctionProfile, id: U64) -> String {
    let Some(path) = f.paths.iter().find(|p| p.id == id) else {
        return format!("path {id}: not among the function's paths");
    };
    let mut blocks: Vec<String> = path.blocks.iter().take(16).map(|b| format!("B{b}")).collect();
    if path.blocks.len() > 16 {
        blocks.push(format!("… ({} more)", path.blocks.len() - 16));
    }
    let mut s = format!("path {id} [{}→{}]: {}", path.start, path.end, blocks.join(" "));
    if let Some(lines) = source_lines(f, &path.blocks) {
        s.push_str(&format!(" ({lines})"));
    }
    s
}

/// A sequence of two or more consecutive paths of one activation of a function, and how often it ran.
struct Sequence<'a> {
    function: &'a FunctionProfile,
    paths: Vec<U64>,
    count: u64,
}

/// Rank of a sequence: greater is hotter (higher count, then longer, then lower function position and
/// lower path IDs).
type SequenceRank = (u64, usize, Reverse<usize>, Reverse<Vec<U64>>);

/// The `top` hottest sequences of 2 to k paths over all functions or only `function`: by count,
/// longer first among equal counts.
fn hottest_sequences<'a>(p: &'a Profile, top: usize, function: Option<&str>) -> Vec<Sequence<'a>> {
    let mut heap: BinaryHeap<Reverse<SequenceRank>> = BinaryHeap::new();
    if top == 0 {
        return Vec::new();
    }
    for (position, f) in p.functions.iter().enumerate() {
        let Some(kipf) = f.kipf.as_ref().filter(|_| function.is_none_or(|sel| matches(f, sel))) else {
            continue;
        };
        kipf.for_each_node(|sequence, node| {
            if sequence.len() < 2 || node.count.0 == 0 {
                return;
            }
            if heap.len() == top
                && heap.peek().is_some_and(|Reverse(min)| (node.count.0, sequence.len()) < (min.0, min.1))
            {
                return;
            }
            heap.push(Reverse((node.count.0, sequence.len(), Reverse(position), Reverse(sequence.to_vec()))));
            if heap.len() > top {
                heap.pop();
            }
        });
    }
    let mut ranked: Vec<SequenceRank> = heap.into_iter().map(|Reverse(r)| r).collect();
    ranked.sort_by(|a, b| b.cmp(a));
    ranked
        .into_iter()
        .map(|(count, _, Reverse(position), Reverse(paths))| Sequence {
            function: &p.functions[position],
            paths,
            count,
        })
        .collect()
}

/// The functions whose forest statistics are shown: the one selected, or those with a hot sequence.
fn shown_functions<'a>(p: &'a Profile, function: Option<&str>, hot: &[Sequence<'a>]) -> Vec<&'a FunctionProfile> {
    let mut shown: Vec<&FunctionProfile> = match function {
        Some(sel) => p.functions.iter().filter(|f| f.kipf.is_some() && matches(f, sel)).collect(),
        None => hot.iter().map(|s| s.function).collect(),
    };
    shown.sort_by_key(|f| f.index);
    shown.dedup_by_key(|f| f.index);
    shown
}

fn program_stats(p: &Profile) -> KipfStats {
    p.functions.iter().filter_map(|f| f.kipf.as_ref()).map(|k| k.stats()).sum()
}

/// The largest `k` of the profile's forests, when it has any.
fn kipf_k(p: &Profile) -> Option<usize> {
    p.kbl.as_ref().map(|k| k.k).or_else(|| p.functions.iter().filter_map(|f| f.kipf.as_ref()).map(|k| k.k).max())
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

/// Mode `kbl`: how the forests were built, their shape (seed 000 Figs. 11–14) and the hottest
/// sequences of 2 to k paths, each path expanded to its blocks and source lines. Prints nothing for a
/// profile without k-iteration path forests.
fn kipf_text(out: &mut impl Write, p: &Profile, top: usize, function: Option<&str>) -> Result<()> {
    let Some(k) = kipf_k(p) else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(out, "k-iteration paths (k = {k})")?;
    if let Some(kbl) = &p.kbl {
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
        let bound = kbl.max_nodes.map(|m| format!("bound of {} k-SF nodes", group(m.0)));
        match (bound, kbl.dropped.0) {
            (Some(b), 0) => writeln!(out, "  {b} not reached: every count is exact")?,
            (b, dropped) if dropped > 0 => writeln!(
                out,
                "  {}: {} path IDs dropped; root counts are exact, deeper counts are lower bounds (short by at most {})",
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
        if let Some(kipf) = &f.kipf {
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
            writeln!(out, "{:>4}  {:>15}  {}", rank + 1, group(s.count), ids.join(" → "))?;
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
            blocks: json_blocks(f, &path.blocks),
        })
        .collect();
    let mut doc = serde_json::json!({
        "module": p.module.path,
        "mode": p.mode,
        "path_executions": p.path_executions,
        "paths": paths,
    });
    if let (Some(k), Some(fields)) = (kipf_k(p), doc.as_object_mut()) {
        let hot = hottest_sequences(p, top, function);
        let functions: Vec<serde_json::Value> = shown_functions(p, function, &hot)
            .into_iter()
            .filter_map(|f| {
                let stats = JsonStats::from(f.kipf.as_ref()?.stats());
                Some(serde_json::json!({"function": f.index, "name": f.name, "stats": stats}))
            })
            .collect();
        let sequences: Vec<JsonSequence> = hot
            .iter()
            .map(|s| JsonSequence {
                function: s.function.index,
                name: s.function.name.as_deref(),
                count: U64(s.count),
                paths: s.paths.iter().map(|&id| json_sequence_path(s.function, id)).collect(),
            })
            .collect();
        fields.insert("k".into(), serde_json::json!(k));
        fields.insert("kbl".into(), serde_json::json!(p.kbl));
        fields.insert(
            "kipf_stats".into(),
            serde_json::json!({"program": JsonStats::from(program_stats(p)), "functions": functions}),
        );
        fields.insert("sequences".into(), serde_json::json!(sequences));
    }
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

/// The shape of a k-IPF in the JSON report.
#[derive(Serialize)]
struct JsonStats {
    roots: u64,
    nodes: u64,
    internal_nodes: u64,
    child_edges: u64,
    leaves: u64,
    leaf_depth_sum: u64,
    avg_degree: Option<f64>,
    avg_leaf_depth: Option<f64>,
}

impl From<KipfStats> for JsonStats {
    fn from(s: KipfStats) -> JsonStats {
        JsonStats {
            roots: s.roots(),
            nodes: s.nodes,
            internal_nodes: s.internal_nodes,
            child_edges: s.child_edges,
            leaves: s.leaves,
            leaf_depth_sum: s.leaf_depth_sum,
            avg_degree: s.avg_degree(),
            avg_leaf_depth: s.avg_leaf_depth(),
        }
    }
}

/// A hot sequence of paths in the JSON report.
#[derive(Serialize)]
struct JsonSequence<'a> {
    function: u32,
    name: Option<&'a str>,
    count: U64,
    paths: Vec<JsonSequencePath<'a>>,
}

/// One path of a hot sequence: its endpoints and blocks (null and empty for an ID the function's
/// path list lacks).
#[derive(Serialize)]
struct JsonSequencePath<'a> {
    id: U64,
    start: Option<pathprof_core::profile::Endpoint>,
    end: Option<pathprof_core::profile::Endpoint>,
    blocks: Vec<JsonBlock<'a>>,
}

fn json_sequence_path(f: &FunctionProfile, id: U64) -> JsonSequencePath<'_> {
    let path = f.paths.iter().find(|p| p.id == id);
    JsonSequencePath {
        id,
        start: path.map(|p| p.start),
        end: path.map(|p| p.end),
        blocks: path.map_or_else(Vec::new, |p| json_blocks(f, &p.blocks)),
    }
}

fn json_blocks<'a>(f: &'a FunctionProfile, blocks: &[u32]) -> Vec<JsonBlock<'a>> {
    blocks
        .iter()
        .filter_map(|&b| f.blocks.get(b as usize))
        .map(|b| JsonBlock { id: b.id, offset: b.offset, end: b.end, line: b.line.as_deref() })
        .collect()
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
    // Ratios of an untimed region are marked: the summary leaves them out.
    let mark = if p.timed { ' ' } else { '*' };
    for m in &p.modes {
        write!(
            out,
            " | {:>10.3} {:>5.1}% {:>6.3}{mark}{:>8.1} {:>6.2}x {:>5.2}x {:>9.1}",
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

/// Corpus-wide ratios; `timed_from` is the shortest bench region they take.
pub fn bench_summary(out: &mut impl Write, r: &crate::bench::BenchReport, timed_from: f64) -> Result<()> {
    for s in &r.summary {
        writeln!(
            out,
            "{}: geometric mean ratio {:.3}, maximum {:.3} ({}) over {} programs",
            s.mode, s.geomean_ratio, s.max_ratio, s.max_program, s.programs
        )?;
    }
    let untimed: Vec<&str> = r.programs.iter().filter(|p| !p.timed).map(|p| p.program.as_str()).collect();
    if !untimed.is_empty() {
        let why = if timed_from > crate::bench::MIN_TIMED_SECONDS {
            format!("under {timed_from} s, --min-seconds")
        } else {
            format!("under {} µs, too short to time", timed_from * 1e6)
        };
        writeln!(out, "left out (uninstrumented bench region {why}): {}", untimed.join(", "))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use pathprof_core::profile::BlockInfo;

    #[test]
    fn source_lines_are_merged_into_runs_per_file() {
        let lines =
            [Some("a.c:12"), Some("a.c:14"), None, Some("a.c:13"), Some("b.h:3"), Some("a.c:20"), Some("weird")];
        let f = FunctionProfile {
            index: 0,
            name: None,
            instrumented: true,
            skip_reason: None,
            num_paths: U64(1),
            counters: None,
            cut_blocks: vec![],
            blocks: lines
                .iter()
                .enumerate()
                .map(|(i, l)| BlockInfo {
                    id: i as u32,
                    offset: 0,
                    end: 0,
                    line: l.map(str::to_string),
                    loop_header: false,
                })
                .collect(),
            paths: vec![],
            edges: vec![],
            increments: 0,
            increments_executed: U64(0),
            kipf: None,
        };
        assert_eq!(source_lines(&f, &[0, 1, 2, 3, 4, 5, 6]).as_deref(), Some("a.c:12-14,20, b.h:3, weird"));
        assert_eq!(source_lines(&f, &[1, 1]).as_deref(), Some("a.c:14"));
        assert_eq!(source_lines(&f, &[2, 99]), None);
    }
}
