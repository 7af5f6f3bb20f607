//! What reports and exports show of a profile: functions picked by name or index, the hottest
//! paths and the hottest sequences of paths [KBL13], the untested paths of residual path profiling
//! [PPP07 §3.5], the paths and functions ranked by an event [EVT23 §4.2], and how functions and
//! blocks are named (labels, source lines). Rendering them as text, JSON or graphs is the caller's.

use pathprof_core::profile::{FunctionProfile, KipfStats, PathCount, Profile, U64};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Whether `f` is the function named `sel` (by its name as the module gives it, demangled, or by
/// index).
pub fn matches(f: &FunctionProfile, sel: &str) -> bool {
    f.name.as_deref().is_some_and(|n| n == sel || demangle(n) == sel) || sel.parse::<u32>().is_ok_and(|i| i == f.index)
}

/// A symbol name as people write it: Rust (legacy and v0) and Itanium C++ names demangled, any
/// other name as it is.
pub fn demangle(name: &str) -> String {
    if let Ok(rust) = rustc_demangle::try_demangle(name) {
        // `{:#}` leaves out the hash suffix.
        return format!("{rust:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(cpp) = cpp_demangle::Symbol::new(name) {
            if let Ok(text) = cpp.demangle() {
                return text;
            }
        }
    }
    name.to_string()
}

/// The function's demangled name, or `func[index]` for a function without a name.
pub fn function_name(f: &FunctionProfile) -> String {
    match &f.name {
        Some(n) => demangle(n),
        None => format!("func[{}]", f.index),
    }
}

/// `name [index]` (the name demangled), or `func[index]` for a function without a name.
pub fn function_label(f: &FunctionProfile) -> String {
    match &f.name {
        Some(_) => format!("{} [{}]", function_name(f), f.index),
        None => function_name(f),
    }
}

/// How hot paths are ranked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rank {
    /// By the operators they executed: count × operators on the path.
    #[default]
    Cost,
    /// By how often they ran.
    Count,
}

impl Rank {
    /// `cost` or `count`, as the command line gives them.
    pub fn parse(s: &str) -> Option<Rank> {
        match s {
            "cost" => Some(Rank::Cost),
            "count" => Some(Rank::Count),
            _ => None,
        }
    }

    /// The weight of `path` of `f` by this rank: its operators executed, or its count.
    pub fn weight(self, f: &FunctionProfile, path: &PathCount) -> u128 {
        match self {
            Rank::Cost => path_cost(f, path),
            Rank::Count => u128::from(path.count.0),
        }
    }

    /// What the rank measures, as reports say it.
    pub fn measure(self) -> &'static str {
        match self {
            Rank::Cost => "operators executed",
            Rank::Count => "executions",
        }
    }
}

/// Operators on one run of `path` of `f`: the sum of its blocks' operators (static).
pub fn path_ops(f: &FunctionProfile, path: &PathCount) -> u64 {
    path.blocks.iter().filter_map(|&b| f.blocks.get(b as usize)).map(|b| u64::from(b.ops)).sum()
}

/// Operators executed by the runs of `path`: its count times its operators.
pub fn path_cost(f: &FunctionProfile, path: &PathCount) -> u128 {
    u128::from(path.count.0) * u128::from(path_ops(f, path))
}

/// Operators executed by every counted path of `p` (of its instrumented functions).
pub fn total_cost(p: &Profile) -> u128 {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |path| path_cost(f, path))).sum()
}

/// `x` as a fraction of `of` (0 when `of` is 0).
pub fn fraction(x: u128, of: u128) -> f64 {
    if of == 0 {
        0.0
    } else {
        x as f64 / of as f64
    }
}

/// Operators executed by the counted paths of `f`.
pub fn function_cost(f: &FunctionProfile) -> u128 {
    f.paths().iter().map(|path| path_cost(f, path)).sum()
}

/// The `top` hottest paths by `rank`, over all functions or only `function`.
pub fn hottest<'a>(
    p: &'a Profile,
    top: usize,
    function: Option<&str>,
    rank: Rank,
) -> Vec<(&'a FunctionProfile, &'a PathCount)> {
    let mut all: Vec<_> = p
        .functions
        .iter()
        .filter(|f| function.is_none_or(|sel| matches(f, sel)))
        .flat_map(|f| f.paths().iter().map(move |path| (f, path)))
        .collect();
    // Ties by cost go to the more frequent path.
    let key = |&(f, path): &(&FunctionProfile, &PathCount)| (rank.weight(f, path), path.count.0);
    all.sort_by_cached_key(|x| (Reverse(key(x)), x.0.index, x.1.id));
    all.truncate(top);
    all
}

/// The source lines of `blocks` of `f`, compactly: per file (in order of first appearance) its sorted
/// lines with runs merged, as in `foo.c:12-14,20`; `None` when no block has a line.
pub fn source_lines(f: &FunctionProfile, blocks: &[u32]) -> Option<String> {
    let mut files: Vec<(&str, Vec<u64>)> = Vec::new();
    for line in blocks.iter().filter_map(|&b| f.blocks.get(b as usize).and_then(|info| info.line.as_deref())) {
        let (file, number) = crate::source::split_line(line);
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

/// A sequence of two or more consecutive paths of one activation of a function, and how often it ran.
pub struct Sequence<'a> {
    pub function: &'a FunctionProfile,
    pub paths: Vec<U64>,
    pub count: u64,
}

/// Rank of a sequence: greater is hotter (higher count, then longer, then lower function position and
/// lower path IDs).
type SequenceRank = (u64, usize, Reverse<usize>, Reverse<Vec<U64>>);

/// The `top` hottest sequences of 2 to k paths over all functions or only `function`: by count,
/// longer first among equal counts.
pub fn hottest_sequences<'a>(p: &'a Profile, top: usize, function: Option<&str>) -> Vec<Sequence<'a>> {
    let mut heap: BinaryHeap<Reverse<SequenceRank>> = BinaryHeap::new();
    if top == 0 {
        return Vec::new();
    }
    for (position, f) in p.functions.iter().enumerate() {
        let Some(kipf) = f.kipf().filter(|_| function.is_none_or(|sel| matches(f, sel))) else {
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
pub fn shown_functions<'a>(p: &'a Profile, function: Option<&str>, hot: &[Sequence<'a>]) -> Vec<&'a FunctionProfile> {
    let mut shown: Vec<&FunctionProfile> = match function {
        Some(sel) => p.functions.iter().filter(|f| f.kipf().is_some() && matches(f, sel)).collect(),
        None => hot.iter().map(|s| s.function).collect(),
    };
    shown.sort_by_key(|f| f.index);
    shown.dedup_by_key(|f| f.index);
    shown
}

/// The shape of all the profile's forests together.
pub fn program_stats(p: &Profile) -> KipfStats {
    p.functions.iter().filter_map(|f| f.kipf()).map(|k| k.stats()).sum()
}

/// The largest `k` of the profile's forests, when it has any.
pub fn kipf_k(p: &Profile) -> Option<usize> {
    p.mode.kbl().map(|k| k.k).or_else(|| p.functions.iter().filter_map(|f| f.kipf()).map(|k| k.k).max())
}

/// What residual path profiling found in a `ppp` profile [PPP07 §3.5, Table 3.1]: the paths that ran
/// and were not interesting — untested, when the interesting ones are those of a test run — with
/// the edges they took that no interesting path takes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Untested<'a> {
    /// Untested paths, and their share of the distinct paths that ran.
    pub paths: u64,
    pub paths_share: f64,
    /// Executions of untested paths, and their share of all path executions.
    pub executions: u64,
    pub executions_share: f64,
    pub functions_with_untested_paths: u64,
    pub untested_edges: u64,
    pub functions_with_untested_edges: u64,
    /// Untested paths in functions where they took no untested edge: residual edge profiling would
    /// not see them.
    pub paths_without_untested_edges: u64,
    /// The untested paths, by decreasing count.
    #[serde(skip)]
    pub list: Vec<(&'a FunctionProfile, &'a PathCount)>,
}

/// The untested paths of `p`; `None` unless it is a `ppp` profile.
pub fn untested(p: &Profile) -> Option<Untested<'_>> {
    p.mode.ppp()?;
    let mut u = Untested {
        paths: 0,
        paths_share: 0.0,
        executions: 0,
        executions_share: 0.0,
        functions_with_untested_paths: 0,
        untested_edges: 0,
        functions_with_untested_edges: 0,
        paths_without_untested_edges: 0,
        list: Vec::new(),
    };
    let mut distinct = 0u64;
    for f in &p.functions {
        distinct += f.paths().len() as u64;
        let Some(ppp) = f.ppp() else { continue };
        u.paths += ppp.residual_paths;
        u.executions = u.executions.saturating_add(ppp.residual_executions.0);
        u.functions_with_untested_paths += u64::from(ppp.residual_paths > 0);
        u.untested_edges += ppp.untested_edges;
        u.functions_with_untested_edges += u64::from(ppp.untested_edges > 0);
        if ppp.untested_edges == 0 {
            u.paths_without_untested_edges += ppp.residual_paths;
        }
        u.list.extend(f.paths().iter().filter(|x| x.interesting == Some(false)).map(|x| (f, x)));
    }
    u.list.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.index.cmp(&b.0.index)).then(a.1.id.cmp(&b.1.id)));
    let share = |x: u64, of: u64| if of == 0 { 0.0 } else { x as f64 / of as f64 };
    u.paths_share = share(u.paths, distinct);
    u.executions_share = share(u.executions, p.path_executions.0);
    Some(u)
}

/// The position of event `event` in an `events` profile: `Err` with a message when the profile is of
/// another mode or does not count that event.
pub fn event_index(p: &Profile, event: &str) -> Result<usize, String> {
    let Some(info) = p.mode.events() else {
        return Err(format!(
            "{} is a {} profile: events come from `pathprof run --mode events`",
            p.module.path, p.mode
        ));
    };
    info.names.iter().position(|n| n == event).ok_or_else(|| {
        format!("{} does not count event {event:?} (it counts {})", p.module.path, info.names.join(", "))
    })
}

/// How many times the event at `index` occurs on one run of `path` of `f`: its blocks' weights.
pub fn path_events(f: &FunctionProfile, path: &PathCount, index: usize) -> u64 {
    path.blocks
        .iter()
        .filter_map(|&b| f.blocks.get(b as usize).and_then(|info| info.events.get(index)))
        .fold(0u64, |sum, &x| sum.saturating_add(x))
}

/// The `top` paths on which the event at `index` occurred most (count times the path's events; the
/// metric-specific path profile [EVT23 §4.2]), over all functions or only `function`: each with
/// its events.
pub fn hottest_by_event<'a>(
    p: &'a Profile,
    index: usize,
    top: usize,
    function: Option<&str>,
) -> Vec<(&'a FunctionProfile, &'a PathCount, u64)> {
    let mut all: Vec<_> = p
        .functions
        .iter()
        .filter(|f| function.is_none_or(|sel| matches(f, sel)))
        .flat_map(|f| {
            f.paths().iter().map(move |path| (f, path, path.count.0.saturating_mul(path_events(f, path, index))))
        })
        .filter(|&(_, _, events)| events > 0)
        .collect();
    all.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.index.cmp(&b.0.index)).then(a.1.id.cmp(&b.1.id)));
    all.truncate(top);
    all
}

/// The functions with event totals, by decreasing total of the event at `index` (then by index),
/// over all functions or only `function`.
pub fn functions_by_event<'a>(p: &'a Profile, index: usize, function: Option<&str>) -> Vec<&'a FunctionProfile> {
    let value = |f: &FunctionProfile| f.events().and_then(|e| e.0.get(index)).map_or(0, |(_, v)| v.0);
    let mut out: Vec<&FunctionProfile> =
        p.functions.iter().filter(|f| f.events().is_some() && function.is_none_or(|sel| matches(f, sel))).collect();
    out.sort_by(|a, b| value(b).cmp(&value(a)).then(a.index.cmp(&b.index)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathprof_core::profile::{BlockInfo, FunctionState};

    #[test]
    fn source_lines_are_merged_into_runs_per_file() {
        let lines =
            [Some("a.c:12"), Some("a.c:14"), None, Some("a.c:13"), Some("b.h:3"), Some("a.c:20"), Some("weird")];
        let f = FunctionProfile {
            index: 0,
            name: None,
            state: FunctionState::Skipped { reason: "none needed".into() },
            blocks: lines
                .iter()
                .enumerate()
                .map(|(i, l)| BlockInfo {
                    id: i as u32,
                    offset: 0,
                    end: 0,
                    line: l.map(str::to_string),
                    loop_header: false,
                    landing: false,
                    ops: 1,
                    calls: 0,
                    events: vec![],
                })
                .collect(),
        };
        assert_eq!(source_lines(&f, &[0, 1, 2, 3, 4, 5, 6]).as_deref(), Some("a.c:12-14,20, b.h:3, weird"));
        assert_eq!(source_lines(&f, &[1, 1]).as_deref(), Some("a.c:14"));
        assert_eq!(source_lines(&f, &[2, 99]), None);
    }
}
