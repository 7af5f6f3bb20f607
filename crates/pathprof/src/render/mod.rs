//! Rendering profiles and figures for people (text) and tools (JSON): what to show is computed by
//! the library ([`crate::view`], [`crate::bench`]); these modules only lay it out.
//!
//! * [`paths`] — a profile's summary and hot paths;
//! * [`kipf`] — a `kbl` profile's forests and hottest sequences of paths;
//! * [`json`] — the same as JSON;
//! * [`bench`] — the table and summaries of `pathprof bench`;
//! * [`branches`] — the most biased and the most evenly split branches (`report --branches`);
//! * [`compare`] — the accuracy of a sampled profile against an exact one;
//! * [`untested`] — the untested paths of a `ppp` profile;
//! * [`events`] — an `events` profile's totals, functions and paths ranked by an event;
//! * [`hints`] — the table of `pathprof bench --hints`;
//! * [`hpp`] — the hardware path profiler's figures, a sweep's table and plot;
//! * [`source`] — hot paths as the source lines they run;
//! * [`html`] — one self-contained page: functions, hot paths with their source, a flame graph.

pub mod bench;
pub mod branches;
pub mod compare;
pub mod events;
pub mod hints;
pub mod hpp;
pub mod html;
pub mod json;
pub mod kipf;
pub mod paths;
pub mod source;
pub mod untested;

use pathprof_core::profile::{FunctionProfile, PathCount};

/// `x` as a percentage of `of` (0 when `of` is 0).
pub fn share(x: u128, of: u128) -> f64 {
    100.0 * crate::view::fraction(x, of)
}

/// `n` with its digits in groups of three: `1,234,567`.
pub fn group(n: u64) -> String {
    group_wide(u128::from(n))
}

/// [`group`] for a sum that may exceed 64 bits.
pub fn group_wide(n: u128) -> String {
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

/// A path's function, ID, endpoints and blocks: the last columns of a table of paths (headed
/// `function`, `path`, `start→end` and `blocks`).
pub fn path_columns(f: &FunctionProfile, path: &PathCount) -> String {
    format!(
        "{:<32} {:>6}  {:<13} {}",
        truncate(&crate::view::function_label(f), 32),
        format!("#{}", path.id),
        format!("{}→{}", path.start, path.end),
        block_list(&path.blocks).join(" ")
    )
}

/// A path's blocks as `B3`, `B4`, …, the first 16 of them and then how many more.
pub fn block_list(blocks: &[u32]) -> Vec<String> {
    let mut out: Vec<String> = blocks.iter().take(16).map(|b| format!("B{b}")).collect();
    if blocks.len() > 16 {
        out.push(format!("… ({} more)", blocks.len() - 16));
    }
    out
}

/// `s` cut to `n` characters, the last one an ellipsis when cut.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
