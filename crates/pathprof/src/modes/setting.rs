//! The settings a mode may take besides its grammar: `pathprof run`'s flags and the inputs of
//! instrumentation, each named by a [`Setting`] that a mode accepts or not; and the checks of the
//! numbers modes are given.

use anyhow::{bail, Result};
use std::time::Duration;

/// A setting given besides a mode's grammar: a flag of `pathprof run` or an input. A mode says which
/// it takes ([`ProfilingMode::accepts`]); the others are refused with the mode named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Samples,
    Stride,
    Every,
    TickMs,
    K,
    MaxNodes,
    /// Threads folding the k-BLPP stream (`--fold-threads`).
    FoldThreads,
    /// Bursty k-BLPP: how long a burst lasts (`--burst-ms`), and how often one opens
    /// (`--burst-every`).
    BurstMs,
    BurstEvery,
    Strategy,
    Cut,
    EdgeProfile,
    /// Instrument only the functions hot in a guiding profile (`--hot-from`).
    HotFrom,
    Interesting,
    Events,
    /// Snapshots while the program runs (`--snapshot-every`): for the modes whose collector can
    /// be read while the program runs.
    Snapshots,
}

impl Setting {
    /// The flag that gives it.
    pub fn flag(self) -> &'static str {
        match self {
            Setting::Samples => "--samples",
            Setting::Stride => "--stride",
            Setting::Every => "--every",
            Setting::TickMs => "--tick-ms",
            Setting::K => "-k",
            Setting::MaxNodes => "--max-nodes",
            Setting::FoldThreads => "--fold-threads",
            Setting::BurstMs => "--burst-ms",
            Setting::BurstEvery => "--burst-every",
            Setting::Strategy => "--strategy",
            Setting::Cut => "--cut",
            Setting::EdgeProfile => "--edge-profile",
            Setting::HotFrom => "--hot-from",
            Setting::Interesting => "--interesting",
            Setting::Events => "--events, --alloc-fn and --event",
            Setting::Snapshots => "--snapshot-every",
        }
    }

    /// Whether the mode's grammar can give it too (`pep:S` and `--samples`): then it may be given
    /// one way only.
    pub fn in_grammar(self) -> bool {
        match self {
            Setting::Samples | Setting::Stride | Setting::Every | Setting::K | Setting::Strategy | Setting::Cut => true,
            Setting::TickMs
            | Setting::MaxNodes
            | Setting::FoldThreads
            | Setting::BurstMs
            | Setting::BurstEvery
            | Setting::EdgeProfile
            | Setting::HotFrom
            | Setting::Interesting
            | Setting::Events
            | Setting::Snapshots => false,
        }
    }
}

/// Settings that `pathprof run` takes as flags, each for the modes that accept it.
#[derive(Clone, Debug, Default)]
pub struct ModeFlags {
    pub samples: Option<u32>,
    pub stride: Option<u32>,
    pub every: Option<u64>,
    pub tick_ms: Option<f64>,
    pub k: Option<u16>,
    pub max_nodes: Option<usize>,
    pub fold_threads: Option<usize>,
    pub burst_ms: Option<f64>,
    pub burst_every: Option<f64>,
    pub strategy: Option<String>,
    pub cut: Option<String>,
}

impl Setting {
    /// The settings whose flag is given: those paired with `true`.
    pub fn given(settings: impl IntoIterator<Item = (bool, Setting)>) -> Vec<Setting> {
        settings.into_iter().filter_map(|(given, s)| given.then_some(s)).collect()
    }
}

impl ModeFlags {
    /// The settings given.
    pub fn given(&self) -> Vec<Setting> {
        Setting::given([
            (self.samples.is_some(), Setting::Samples),
            (self.stride.is_some(), Setting::Stride),
            (self.every.is_some(), Setting::Every),
            (self.tick_ms.is_some(), Setting::TickMs),
            (self.k.is_some(), Setting::K),
            (self.max_nodes.is_some(), Setting::MaxNodes),
            (self.fold_threads.is_some(), Setting::FoldThreads),
            (self.burst_ms.is_some(), Setting::BurstMs),
            (self.burst_every.is_some(), Setting::BurstEvery),
            (self.strategy.is_some(), Setting::Strategy),
            (self.cut.is_some(), Setting::Cut),
        ])
    }
}

/// The whole number from 1 to `max` that mode `spec` gives as `what` (`K`, `S`, ...) in `value`.
pub(crate) fn whole_number(spec: &str, what: &str, value: &str, max: u64) -> Result<u64> {
    match value.parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => bail!("mode {spec:?}: {what} must be a whole number from 1 to {max}"),
    }
}

/// The `ms` milliseconds that `flag` gives, from `range.0` to `range.1`, as a duration.
pub(crate) fn milliseconds(flag: &str, ms: f64, range: (f64, f64)) -> Result<Duration> {
    if !(range.0..=range.1).contains(&ms) {
        bail!("{flag} must be a number of milliseconds from {} to {}", range.0, range.1);
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}
