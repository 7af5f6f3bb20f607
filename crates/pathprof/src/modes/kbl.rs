//! Mode `kbl`: multi-iteration path profiling (k-BLPP [KBL13]). Path ends stream their IDs, with
//! activation markers, to a second thread that folds them into a k-slab forest [KBL13 Fig. 6],
//! converted at the end into every function's k-iteration path forest [KBL13 Fig. 7], whose first
//! level is the Ball–Larus profile. The instrumenter's sink is `stream` (with `array` for functions
//! that end one path per activation); the runtime's collector is `stream`; the forests are
//! `pathprof_core::kpath`.

use super::{ModeFacts, ModeFlags, ModeRun};
use anyhow::{bail, Result};
use pathprof_core::kpath::{Kipf, KipfNode, NODE_BYTES};
use pathprof_core::profile::{FunctionProfile, KblInfo, KipfNodeProfile, KipfProfile, U64};
use pathprof_runtime::{Engine, ForestSettings, Program, RunConfig, StreamCollector};
use pathprof_wasm::abi::STREAM_CAPACITY;
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;
use std::fmt;

/// Longest sequences of paths (`K`).
pub const MAX_K: usize = 64;
/// `K` when the mode does not give it.
pub const DEFAULT_K: usize = 4;

/// Reads what follows `kbl:` in `spec` (`K`), or nothing.
pub(crate) fn parse(spec: &str, k: Option<&str>) -> Result<ForestSettings> {
    let k = match k {
        None => DEFAULT_K,
        Some(k) => match k.parse::<usize>() {
            Ok(k) if (1..=MAX_K).contains(&k) => k,
            _ => bail!("mode {spec:?}: K must be a whole number from 1 to {MAX_K}"),
        },
    };
    Ok(ForestSettings { k, max_nodes: None })
}

/// Writes the mode in its shortest form.
pub(crate) fn fmt(f: &mut fmt::Formatter<'_>, settings: &ForestSettings) -> fmt::Result {
    match settings.k {
        DEFAULT_K => f.write_str("kbl"),
        k => write!(f, "kbl:{k}"),
    }
}

/// `settings` with the settings of `pathprof run`'s flags.
pub(crate) fn with_flags(settings: ForestSettings, flags: &ModeFlags) -> ForestSettings {
    ForestSettings { k: flags.k.map_or(settings.k, usize::from), max_nodes: flags.max_nodes.or(settings.max_nodes) }
}

/// Runs a module instrumented to stream its paths.
pub(crate) fn run(
    engine: &Engine,
    module: &Program,
    map: &ProfileMap,
    config: &RunConfig,
    settings: ForestSettings,
) -> Result<ModeRun> {
    let collector = StreamCollector::new(map, settings)?;
    let (outcome, streamed) = pathprof_runtime::run_module(engine, module, Some(map), collector, config)?;
    let f = streamed.ksf;
    let info = KblInfo {
        k: settings.k,
        stream_items: U64(f.stream_items),
        ksf_nodes: U64(f.nodes as u64),
        ksf_node_bytes: NODE_BYTES as u32,
        sibling_scans: U64(f.sibling_scans),
        max_nodes: settings.max_nodes.map(|n| U64(n as u64)),
        dropped: U64(f.dropped),
        stream_handovers: U64(f.handovers),
        stream_wait_seconds: f.waited.as_secs_f64(),
    };
    // The stream buffers of the host, and the forest's nodes.
    let host_bytes = 8 * u64::from(STREAM_CAPACITY) + (f.nodes * NODE_BYTES) as u64;
    Ok(ModeRun { outcome, counts: streamed.counts, facts: ModeFacts::Kbl { info, kipf: streamed.kipf }, host_bytes })
}

/// Gives every function its part of the run's k-IPF (labels are `function << 32 | path ID`), cut to
/// sequences of at most `k` paths.
pub(crate) fn attach_kipf(functions: &mut [FunctionProfile], kipf: &Kipf, k: usize) {
    fn convert(n: &KipfNode, depth: usize) -> KipfNodeProfile {
        let children = if depth > 1 { n.children.iter().map(|c| convert(c, depth - 1)).collect() } else { Vec::new() };
        KipfNodeProfile { path: U64(n.path & 0xffff_ffff), count: U64(n.count), children }
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
                children: streamed.remove(&p.id.0).map_or_else(Vec::new, |n| n.children),
            })
            .collect();
        roots.extend(streamed.into_values());
        roots.sort_by_key(|r| r.path);
        profile.kipf = Some(KipfProfile { k, roots });
    }
}
