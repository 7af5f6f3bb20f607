//! `pathprof export`: profiles in the formats of other tools.
//!
//! * folded stacks, the input format of flame-graph tools, and SVG flame graphs drawn from them
//!   (here): a `kbl` profile's k-iteration path forests, or any profile's paths;
//! * [`pprof`] — `profile.proto`, gzipped, as pprof reads it;
//! * [`speedscope`] — speedscope's JSON file format.
//!
//! Folded paths: every path that ran gives one line `function;path frame WEIGHT`, where the weight is
//! its count or its cost (count × operators on the path). Folded forests: every k-IPF node whose count exceeds the sum of its children's counts gives one line
//! `function;path frame;...;path frame SELF`, where the frames are the function and the paths of the
//! node's sequence from its root down, and `SELF` is that difference: the number of times the
//! sequence ran without being continued by a deeper node. A function's lines thus add up to the sum
//! of its root counts (its Ball–Larus path executions).

pub mod pprof;
pub mod speedscope;

use crate::view::{function_label, matches, source_lines, Rank};
use anyhow::{anyhow, bail, Result};
use pathprof_core::profile::{FunctionProfile, PathCount, Profile, U64};
use std::collections::HashMap;
use std::path::Path;

/// `s` as a frame name: `;` separates frames and a line ends at its newline, so `;` becomes `,` and
/// control characters become spaces.
fn frame_name(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ';' => ',',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// The frame of path `id` of `f`: `path 3 (foo.c:12-14)` when its blocks have source lines,
/// `path 3 (B2-B7)` otherwise. It always ends with `)`, so a count never looks like part of it.
fn path_frame(f: &FunctionProfile, id: U64) -> String {
    match f.paths().iter().find(|p| p.id == id) {
        None => frame_name(&format!("path {id} (unknown path)")),
        Some(path) => frame_name(&path_name(f, path)),
    }
}

/// `path 3 (foo.c:12-14)` when the blocks of `path` have source lines, `path 3 (B2-B7)` otherwise.
pub fn path_name(f: &FunctionProfile, path: &PathCount) -> String {
    let place = source_lines(f, &path.blocks).unwrap_or_else(|| match (path.blocks.first(), path.blocks.last()) {
        (Some(a), Some(b)) if a == b => format!("B{a}"),
        (Some(a), Some(b)) => format!("B{a}-B{b}"),
        _ => format!("{}→{}", path.start, path.end),
    });
    format!("path {} ({place})", path.id)
}

/// The folded stacks of the paths of `p` that ran (of `function` only, when given), each weighted
/// by `weight`, sorted; paths of weight 0 are left out.
pub fn folded_paths(p: &Profile, function: Option<&str>, weight: Rank) -> Vec<String> {
    let mut lines = Vec::new();
    for f in p.functions.iter().filter(|f| function.is_none_or(|sel| matches(f, sel))) {
        let label = frame_name(&function_label(f));
        for path in f.paths() {
            let w = weight.weight(f, path);
            if w > 0 {
                lines.push(format!("{label};{} {w}", frame_name(&path_name(f, path))));
            }
        }
    }
    lines.sort_unstable();
    lines
}

/// The folded stacks of the k-IPFs of `p`, or of `function` only, sorted.
pub fn folded(p: &Profile, function: Option<&str>) -> Vec<String> {
    let mut lines = Vec::new();
    for f in p.functions.iter().filter(|f| function.is_none_or(|sel| matches(f, sel))) {
        let Some(kipf) = f.kipf() else {
            continue;
        };
        let label = frame_name(&function_label(f));
        let mut frames: HashMap<U64, String> = HashMap::new();
        kipf.for_each_node(|sequence, node| {
            let continued = node.children.iter().fold(0u64, |sum, c| sum.saturating_add(c.count.0));
            let own = node.count.0.saturating_sub(continued);
            if own == 0 {
                return;
            }
            let mut line = label.clone();
            for &id in sequence {
                line.push(';');
                line.push_str(frames.entry(id).or_insert_with(|| path_frame(f, id)));
            }
            line.push_str(&format!(" {own}"));
            lines.push(line);
        });
    }
    lines.sort_unstable();
    lines
}

/// What a flame graph shows, for its title and tooltips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drawing {
    /// k-iteration path forests, by count.
    Forests,
    /// Paths, by the weight given.
    Paths(Rank),
}

/// The flame graph of folded stacks `lines` as an SVG document.
pub fn flame_graph(p: &Profile, lines: &[String], function: Option<&str>, drawing: Drawing) -> Result<Vec<u8>> {
    if lines.is_empty() {
        bail!("nothing to draw: no path ran");
    }
    // The flame graph adds the counts up in a `usize`.
    let total: u128 = lines.iter().filter_map(|l| l.rsplit_once(' ')?.1.parse::<u128>().ok()).sum();
    if total > usize::MAX as u128 {
        bail!("the counts add up to {total}, too many to draw");
    }
    let program = Path::new(&p.module.path)
        .file_name()
        .map_or_else(|| p.module.path.clone(), |n| n.to_string_lossy().into_owned());
    let of = match function {
        Some(sel) => format!("{sel} in {program}"),
        None => program,
    };
    let mut options = inferno::flamegraph::Options::default();
    match drawing {
        Drawing::Forests => {
            options.title = match crate::view::kipf_k(p) {
                Some(k) => format!("k-iteration paths of {of} (k = {k})"),
                None => format!("k-iteration paths of {of}"),
            };
            options.subtitle = Some("a frame above a path: the path that ran next in the same activation".to_string());
            options.count_name = "executions".to_string();
        }
        Drawing::Paths(weight) => {
            options.title = format!("paths of {of} ({} profile)", p.mode);
            options.subtitle = Some(match weight {
                Rank::Cost => "width: operators executed (count × operators on the path)".to_string(),
                Rank::Count => "width: executions".to_string(),
            });
            options.count_name = match weight {
                Rank::Cost => "operators".to_string(),
                Rank::Count => "executions".to_string(),
            };
        }
    }
    options.name_type = "Path:".to_string();
    options.deterministic = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
        .map_err(|e| anyhow!("cannot draw the flame graph: {e}"))?;
    Ok(svg)
}
