//! Mode `kbl`: multi-iteration path profiling (k-BLPP [KBL13]). Path ends stream their IDs, with
//! activation markers, to a second thread that folds them into a k-slab forest [KBL13 Fig. 6],
//! converted at the end into every function's k-iteration path forest [KBL13 Fig. 7], whose first
//! level is the Ball–Larus profile. The instrumenter's sink is `stream` (with `array` for functions
//! that end one path per activation); the runtime's collector is `stream`; the forests are
//! `pathprof_core::kpath`.
//!
//! `kbl:K:burst` is bursty k-BLPP [KBL13 §6]: paths are counted as `bl` counts them and streamed only
//! during bursts a timer opens (sink `burst`, the runtime's `collect::burst`), so that the roots stay
//! exact and the deeper levels are sampled.

use super::mode::{instrumented, sum, Given, Mode, ModeKind, ModeRun, ProfilingMode, RunFigure, SnapshotSink};
use super::setting::{milliseconds, whole_number, ModeFlags, Setting};
use crate::mode_identity;
use anyhow::{anyhow, bail, Result};
use pathprof_core::kpath::{Kipf, KipfNode, NODE_BYTES};
use pathprof_core::profile::{
    BurstInfo, FunctionProfile, KblInfo, KipfNodeProfile, KipfProfile, PathProfile, ProfileMode, U64,
};
use pathprof_runtime::{
    Bursts, Engine, ForestSettings, Program, Recorded, RunConfig, RunOutcome, StreamCollector, Streamed,
};
use pathprof_wasm::abi::STREAM_CAPACITY;
use pathprof_wasm::{ProfileMap, SinkKind};
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

/// Longest sequences of paths (`K`).
pub const MAX_K: usize = 64;
/// `K` when the mode does not give it.
pub const DEFAULT_K: usize = 4;

/// Mode `kbl`'s kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kbl;

/// Bursts when the mode does not say: 1 ms every 20 ms.
pub const DEFAULT_BURSTS: Bursts = Bursts { length: Duration::from_millis(1), every: Duration::from_millis(20) };
/// Shortest and longest burst settings, in milliseconds.
const BURST_MS: (f64, f64) = (0.01, 3_600_000.0);

/// A `kbl` mode: the longest sequences of paths, the bound on the forest's nodes, and the bursts
/// when paths are streamed only during bursts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KblMode {
    pub forest: ForestSettings,
    pub bursts: Option<Bursts>,
}

/// What a `kbl` run measured: how the forest was built, and the forest.
struct KblFacts {
    info: KblInfo,
    kipf: Kipf,
}

impl ModeKind for Kbl {
    fn name(&self) -> &'static str {
        "kbl"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["kbl[:K][:burst]"]
    }

    fn parse(&self, spec: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        Some(parse(spec, settings).map(Mode::new))
    }

    /// `kbl:burst` gives no K: `-k` may.
    fn gives_grammar_settings(&self, settings: &str) -> bool {
        settings != "burst"
    }

    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
        let (ProfileMode::Kbl(x), ProfileMode::Kbl(y)) = (a, b) else { bail!("it is not a kbl profile") };
        if (x.k, x.max_nodes, x.ksf_node_bytes) != (y.k, y.max_nodes, y.ksf_node_bytes) {
            bail!("its forests were built with k = {} and another bound or layout (here k = {})", y.k, x.k);
        }
        let bursts = match (&x.bursts, &y.bursts) {
            (None, None) => None,
            (Some(a), Some(b)) if (a.ms, a.every_ms) == (b.ms, b.every_ms) => Some(BurstInfo {
                opened: U64(sum(a.opened.0, b.opened.0, "the bursts")?),
                streamed_path_ends: U64(sum(a.streamed_path_ends.0, b.streamed_path_ends.0, "the streamed path ends")?),
                path_ends: U64(sum(a.path_ends.0, b.path_ends.0, "the path ends")?),
                ..a.clone()
            }),
            _ => bail!("its sequences were streamed in other bursts, or in none"),
        };
        let mut k = x.clone();
        k.bursts = bursts;
        k.stream_items = U64(sum(x.stream_items.0, y.stream_items.0, "the stream items")?);
        k.ksf_nodes = U64(sum(x.ksf_nodes.0, y.ksf_nodes.0, "the k-SF nodes")?);
        k.sibling_scans = U64(sum(x.sibling_scans.0, y.sibling_scans.0, "the sibling scans")?);
        k.dropped = U64(sum(x.dropped.0, y.dropped.0, "the dropped path IDs")?);
        k.stream_handovers = U64(sum(x.stream_handovers.0, y.stream_handovers.0, "the stream hand-overs")?);
        k.stream_wait_seconds = x.stream_wait_seconds + y.stream_wait_seconds;
        k.fold_threads = x.fold_threads.max(y.fold_threads);
        Ok(ProfileMode::Kbl(k))
    }

    fn merge_function(&self, a: &mut PathProfile, b: &PathProfile) -> Result<()> {
        match (&mut a.kipf, &b.kipf) {
            (Some(x), Some(y)) if x.k == y.k => {
                add_forest(&mut x.roots, &y.roots)?;
                // Each side's counts are short by at most its own bound: the sums by at most both.
                let short = sum(x.short.map_or(0, |s| s.0), y.short.map_or(0, |s| s.0), "k-IPF bounds")?;
                x.bound(short);
                Ok(())
            }
            (None, None) => Ok(()),
            _ => bail!("its k-iteration path forests differ in k"),
        }
    }
}

impl ProfilingMode for KblMode {
    fn kind(&self) -> &'static dyn ModeKind {
        &Kbl
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.forest.k, self.bursts.is_some()) {
            (DEFAULT_K, false) => f.write_str("kbl"),
            (k, false) => write!(f, "kbl:{k}"),
            (k, true) => write!(f, "kbl:{k}:burst"),
        }
    }

    fn accepts(&self, setting: Setting) -> bool {
        match setting {
            Setting::K | Setting::MaxNodes | Setting::FoldThreads | Setting::EdgeProfile => true,
            Setting::BurstMs | Setting::BurstEvery => self.bursts.is_some(),
            _ => false,
        }
    }

    fn with_flags(&self, flags: &ModeFlags) -> Result<Mode> {
        let ForestSettings { k, max_nodes, fold_threads } = self.forest;
        let ms = |flag: &str, ms: Option<f64>, default: Duration| {
            ms.map_or(Ok(default), |ms| milliseconds(flag, ms, BURST_MS))
        };
        let bursts = match self.bursts {
            Some(b) => Some(Bursts {
                length: ms("--burst-ms", flags.burst_ms, b.length)?,
                every: ms("--burst-every", flags.burst_every, b.every)?,
            }),
            None => None,
        };
        Ok(Mode::new(KblMode {
            forest: ForestSettings {
                k: flags.k.map_or(k, usize::from),
                max_nodes: flags.max_nodes.or(max_nodes),
                fold_threads: flags.fold_threads.or(fold_threads),
            },
            bursts,
        }))
    }

    fn run_flags(&self) -> Option<String> {
        let threads = self.forest.fold_threads.map(|n| format!("×{n}"));
        let bursts = self
            .bursts
            .filter(|b| *b != DEFAULT_BURSTS)
            .map(|b| format!("{}/{} ms", b.length.as_secs_f64() * 1e3, b.every.as_secs_f64() * 1e3));
        match (threads, bursts) {
            (Some(t), Some(b)) => Some(format!("{t} {b}")),
            (t, b) => t.or(b),
        }
    }

    fn sink(&self) -> Option<SinkKind> {
        Some(if self.bursts.is_some() { SinkKind::Bursts } else { SinkKind::Stream })
    }

    /// The forest is folded on a thread of its own, which a snapshot would have to wait for: a
    /// `kbl` run takes none.
    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        _: Option<&SnapshotSink>,
    ) -> Result<ModeRun> {
        run(engine, program, instrumented(map)?, config, *self)
    }

    /// A bursty module run by another host streams nothing unless that host opened bursts: its
    /// counts are exact, its sequences those it streamed.
    fn replay(&self, map: &ProfileMap, recorded: Recorded) -> Result<ModeRun> {
        let collector = StreamCollector::new(map, self.forest)?;
        let (outcome, streamed) = pathprof_runtime::replay(collector, map, recorded)?;
        Ok(streamed_run(outcome, streamed, *self))
    }

    fn attach(&self, run: &ModeRun, _: &ProfileMap, functions: &mut [FunctionProfile]) -> Result<()> {
        let facts = run.facts::<KblFacts>()?;
        attach_kipf(functions, &facts.kipf, facts.info.k, facts.info.dropped.0);
        Ok(())
    }

    fn profile_mode(
        &self,
        run: &ModeRun,
        _: &[FunctionProfile],
        _: Option<&ProfileMap>,
        _: &Given,
    ) -> Result<ProfileMode> {
        Ok(ProfileMode::Kbl(run.facts::<KblFacts>()?.info.clone()))
    }

    mode_identity!();
}

/// Reads what follows `kbl:` in `spec` (`K`, `K:burst` or `burst`), or nothing.
fn parse(spec: &str, settings: Option<&str>) -> Result<KblMode> {
    let (k, bursts) = match settings {
        None => (None, false),
        Some("burst") => (None, true),
        Some(s) => match s.strip_suffix(":burst") {
            Some(k) => (Some(k), true),
            None => (Some(s), false),
        },
    };
    let k = match k {
        None => DEFAULT_K,
        Some(k) => whole_number(spec, "K", k, MAX_K as u64)
            .map_err(|e| anyhow!("{e}, optionally followed by :burst"))? as usize,
    };
    Ok(KblMode { forest: ForestSettings::k(k), bursts: bursts.then_some(DEFAULT_BURSTS) })
}

/// Runs a module instrumented to stream its paths.
fn run(engine: &Engine, program: &Program, map: &ProfileMap, config: &RunConfig, mode: KblMode) -> Result<ModeRun> {
    let mut collector = StreamCollector::new(map, mode.forest)?;
    if let Some(bursts) = mode.bursts {
        collector = collector.bursts(bursts);
    }
    let (outcome, streamed) = pathprof_runtime::run_module(engine, program, Some(map), collector, config)?;
    Ok(streamed_run(outcome, streamed, mode))
}

/// What a run streamed into a forest built as `mode` says recorded.
fn streamed_run(outcome: RunOutcome, streamed: Streamed, mode: KblMode) -> ModeRun {
    let settings = mode.forest;
    let f = streamed.ksf;
    let bursts = mode.bursts.map(|b| BurstInfo {
        ms: b.length.as_secs_f64() * 1e3,
        every_ms: b.every.as_secs_f64() * 1e3,
        opened: U64(streamed.bursts.unwrap_or(0)),
        streamed_path_ends: U64(streamed.kipf.roots.iter().fold(0, |n, r| n.saturating_add(r.count))),
        path_ends: U64(streamed.counts.values().flatten().fold(0, |n, &(_, c)| n.saturating_add(c))),
    });
    let info = KblInfo {
        k: settings.k,
        stream_items: U64(f.stream_items),
        ksf_nodes: U64(f.nodes as u64),
        ksf_node_bytes: NODE_BYTES as u32,
        sibling_scans: U64(f.sibling_scans),
        max_nodes: settings.max_nodes.map(|n| U64(n as u64)),
        dropped: U64(f.dropped),
        fold_threads: f.fold_threads,
        stream_handovers: U64(f.handovers),
        stream_wait_seconds: f.waited.as_secs_f64(),
        bursts,
    };
    // The stream buffers of the host, and the forest's nodes.
    let host_bytes = 8 * u64::from(STREAM_CAPACITY) + (f.nodes * NODE_BYTES) as u64;
    let figures = vec![RunFigure { key: "ksf_nodes", label: "k-SF nodes", value: f.nodes as u64 }];
    let facts = Box::new(KblFacts { info, kipf: streamed.kipf });
    ModeRun { outcome, counts: streamed.counts, facts, host_bytes, figures }
}

/// Gives every function its part of the run's k-IPF (labels are `function << 32 | path ID`), cut to
/// sequences of at most `k` paths, with its bounds when the counts are `short` of the truth by at most
/// that.
fn attach_kipf(functions: &mut [FunctionProfile], kipf: &Kipf, k: usize, short: u64) {
    fn convert(n: &KipfNode, depth: usize) -> KipfNodeProfile {
        let children = if depth > 1 { n.children.iter().map(|c| convert(c, depth - 1)).collect() } else { Vec::new() };
        KipfNodeProfile { path: U64(n.path & 0xffff_ffff), count: U64(n.count), max: None, children }
    }
    let mut by_function: HashMap<u32, Vec<&KipfNode>> = HashMap::new();
    for root in &kipf.roots {
        by_function.entry((root.path >> 32) as u32).or_default().push(root);
    }
    for f in functions.iter_mut() {
        let index = f.index;
        let Some(profile) = f.profiled_mut() else { continue };
        // The roots are the function's Ball–Larus counts. Sequences of two paths or more come from the
        // stream: a function counted in an array, or an activation that ended a single path, has none.
        let mut streamed: HashMap<u64, KipfNodeProfile> = by_function
            .remove(&index)
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r.path & 0xffff_ffff, convert(r, k)))
            .collect();
        let mut roots: Vec<KipfNodeProfile> = profile
            .paths
            .iter()
            .map(|p| KipfNodeProfile {
                path: p.id,
                count: p.count,
                max: None,
                children: streamed.remove(&p.id.0).map_or_else(Vec::new, |n| n.children),
            })
            .collect();
        roots.extend(streamed.into_values());
        roots.sort_by_key(|r| r.path);
        let mut kipf = KipfProfile { k, short: None, roots };
        kipf.bound(short);
        profile.kipf = Some(kipf);
    }
}

/// Adds forest `b` to `a`: nodes of the same sequence of paths add their counts.
fn add_forest(a: &mut Vec<KipfNodeProfile>, b: &[KipfNodeProfile]) -> Result<()> {
    let mut at: HashMap<U64, usize> = a.iter().enumerate().map(|(i, x)| (x.path, i)).collect();
    for node in b {
        match at.get(&node.path) {
            Some(&i) => {
                let mine = &mut a[i];
                mine.count = U64(sum(mine.count.0, node.count.0, "k-IPF counts")?);
                add_forest(&mut mine.children, &node.children)?;
            }
            None => {
                at.insert(node.path, a.len());
                a.push(node.clone());
            }
        }
    }
    Ok(())
}
