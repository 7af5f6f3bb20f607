//! Rendering profiles and figures for people (text) and tools (JSON): what to show is computed by
//! the library ([`pathprof::view`], [`pathprof::bench`]); these modules only lay it out.
//!
//! * [`paths`] — a profile's summary and hot paths;
//! * [`kipf`] — a `kbl` profile's forests and hottest sequences of paths;
//! * [`json`] — the same as JSON;
//! * [`bench`] — the table and summaries of `pathprof bench`;
//! * [`compare`] — the accuracy of a sampled profile against an exact one;
//! * [`untested`] — the untested paths of a `ppp` profile.

pub mod bench;
pub mod compare;
pub mod json;
pub mod kipf;
pub mod paths;
pub mod untested;

/// `n` with its digits in groups of three: `1,234,567`.
pub fn group(n: u64) -> String {
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
