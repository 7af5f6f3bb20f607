//! What guides a variant that `pathprof bench` measures besides its mode: static estimates, hot
//! functions only, an edge profile [PEP05 §3.4], both, or tested segments; and what the variant is
//! called in the table.

use crate::modes::Mode;

/// What guides a measured variant's instrumentation besides its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Guide {
    /// Static estimates, every function instrumented.
    Unguided,
    /// Only the functions hot in an exact profile ([`super::BenchOptions::hot_share`]).
    Hot,
    /// Numbering and increments from a profile's edge frequencies
    /// ([`super::BenchOptions::edge_profile_from`]).
    Edges,
    /// The segments of an `ips:K` run interesting ([`super::BenchOptions::tested_segments`]).
    Tested,
    /// Both [`Guide::Hot`] and [`Guide::Edges`].
    HotEdges,
}

impl Guide {
    /// Whether only the hot functions are instrumented.
    pub(super) fn hot(self) -> bool {
        matches!(self, Guide::Hot | Guide::HotEdges)
    }

    /// Whether paths are numbered from an edge profile.
    pub(super) fn edges(self) -> bool {
        matches!(self, Guide::Edges | Guide::HotEdges)
    }
}

/// What a variant is called in the table: the mode, then `hot` after a mode guided by hot
/// functions, `edges` after one numbered from an edge profile, both after one guided by both, `tested`
/// after one given tested segments.
pub(super) fn label(mode: &Mode, guide: Guide) -> String {
    let flags = mode.run_flags().map_or_else(String::new, |f| format!(" {f}"));
    let guide = match guide {
        Guide::Unguided => "",
        Guide::Hot => " hot",
        Guide::Edges => " edges",
        Guide::Tested => " tested",
        Guide::HotEdges => " hot edges",
    };
    format!("{mode}{flags}{guide}")
}
