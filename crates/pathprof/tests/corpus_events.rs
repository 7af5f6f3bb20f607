//! Event counting [EVT23] on the programs of ../shared/corpus whose paths are the same in every run:
//!
//! * path counting (`pc`), path decoding (`pd`) and direct counting (`dec`), each with paths cut
//!   nowhere, at every merge and where a function's paths exceed the budget, give identical totals
//!   per function and per event;
//! * those totals equal an independent count: the block frequencies of a `bl` profile times the
//!   events of each block's operators, decoded here with wasmparser and classified by this test's
//!   own tables;
//! * with paths cut at every merge, every block's frequency is the sum of the counts of the paths
//!   through it, and each path is fixed by its last edge;
//! * the instrumented programs print exactly what they should.
//!
//! Skipped, with a message, when the corpus is absent.

mod common;

use common::{corpus_dir, profile_checked, DETERMINISTIC};
use pathprof::Inputs;
use pathprof_core::profile::{FunctionProfile, Profile};
use std::collections::{BTreeMap, HashMap};
use wasmparser::{Operator, Parser, Payload};

/// The event modes compared: every strategy, every way of cutting.
const MODES: &[&str] =
    &["events:pc:none", "events:pc:merges", "events", "events:pd:none", "events:pd:merges", "events:pd", "events:dec"];

/// `function → [(event, total)]` of an events profile.
type Totals = BTreeMap<u32, Vec<(String, u64)>>;

/// The event totals of every function of an events profile.
fn totals(p: &Profile) -> Totals {
    p.functions
        .iter()
        .filter_map(|f| Some((f.index, f.events()?.0.iter().map(|(n, v)| (n.clone(), v.0)).collect())))
        .collect()
}

/// The weights this test gives an operator, for the events it checks independently.
fn oracle(op: &Operator, event: &str) -> Option<u64> {
    use Operator::*;
    let load = match op {
        I32Load { .. } | F32Load { .. } | I64Load32S { .. } | I64Load32U { .. } => Some(4),
        I64Load { .. } | F64Load { .. } => Some(8),
        I32Load8S { .. } | I32Load8U { .. } | I64Load8S { .. } | I64Load8U { .. } => Some(1),
        I32Load16S { .. } | I32Load16U { .. } | I64Load16S { .. } | I64Load16U { .. } => Some(2),
        _ => None,
    };
    let store = match op {
        I32Store { .. } | F32Store { .. } | I64Store32 { .. } => Some(4),
        I64Store { .. } | F64Store { .. } => Some(8),
        I32Store8 { .. } | I64Store8 { .. } => Some(1),
        I32Store16 { .. } | I64Store16 { .. } => Some(2),
        _ => None,
    };
    Some(match event {
        "instr" => 1,
        "load" => u64::from(load.is_some()),
        "store" => u64::from(store.is_some()),
        "bytes_loaded" => load.unwrap_or(0),
        "bytes_stored" => store.unwrap_or(0),
        "call" => u64::from(matches!(op, Call { .. } | ReturnCall { .. })),
        "call_indirect" => u64::from(matches!(op, CallIndirect { .. } | ReturnCallIndirect { .. } | CallRef { .. })),
        "br_table" => u64::from(matches!(op, BrTable { .. })),
        "memory_grow" => u64::from(matches!(op, MemoryGrow { .. })),
        "div" => u64::from(matches!(op, I32DivS | I32DivU | I32RemS | I32RemU | I64DivS | I64DivU | I64RemS | I64RemU)),
        "gc_new" => u64::from(matches!(
            op,
            StructNew { .. }
                | StructNewDefault { .. }
                | ArrayNew { .. }
                | ArrayNewDefault { .. }
                | ArrayNewFixed { .. }
                | ArrayNewData { .. }
                | ArrayNewElem { .. }
        )),
        _ => return None,
    })
}

/// Every operator of the module with its offset in the file.
fn operators(bytes: &[u8]) -> Vec<(u64, Operator<'_>)> {
    let mut out = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        if let Payload::CodeSectionEntry(body) = payload.unwrap() {
            let mut reader = body.get_operators_reader().unwrap();
            while !reader.eof() {
                let at = reader.original_position() as u64;
                out.push((at, reader.read().unwrap()));
            }
        }
    }
    out
}

/// How many times each block of `f` ran, from its paths (a block is on a path at most once).
fn block_frequencies(f: &FunctionProfile) -> Vec<u64> {
    let mut freq = vec![0u64; f.blocks.len()];
    for p in f.paths() {
        for &b in &p.blocks {
            freq[b as usize] += p.count.0;
        }
    }
    freq
}

/// The independent count of `event` in `f`: every block's frequency in `bl` times the weights of
/// the operators in its byte range.
fn independent(ops: &[(u64, Operator)], f: &FunctionProfile, bl: &FunctionProfile, event: &str) -> Option<u64> {
    let freq = block_frequencies(bl);
    let mut total = 0u64;
    for (b, info) in f.blocks.iter().enumerate() {
        let first = ops.partition_point(|(at, _)| *at < info.offset);
        let last = ops.partition_point(|(at, _)| *at < info.end);
        for (_, op) in &ops[first..last] {
            total += freq[b] * oracle(op, event)?;
        }
    }
    Some(total)
}

#[test]
fn every_strategy_cut_or_not_counts_the_same_events() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let engine = pathprof_runtime::engine().unwrap();
    for name in DETERMINISTIC {
        let wasm = dir.join(name);
        let bytes = std::fs::read(&wasm).unwrap();
        let ops = operators(&bytes);
        let bl = profile_checked(&engine, &wasm, name, "bl", &Inputs::default());
        let bl_by_index: HashMap<u32, &FunctionProfile> = bl.functions.iter().map(|f| (f.index, f)).collect();
        let mut reference: Option<(String, Totals)> = None;
        for mode in MODES {
            let p = profile_checked(&engine, &wasm, name, mode, &Inputs::default());
            let info = p.mode.events().expect("an events profile");
            assert_eq!((info.undercount_bound.as_ref(), info.overcount_bound.as_ref()), (None, None), "{name}");
            let got = totals(&p);
            match &reference {
                None => reference = Some((mode.to_string(), got.clone())),
                Some((first, want)) => assert!(got == *want, "{name}: {mode} counts other events than {first}"),
            }
            let sum: Vec<u64> = info.totals.values().collect();
            let by_event: Vec<u64> = (0..info.names.len()).map(|j| got.values().map(|v| v[j].1).sum()).collect();
            assert_eq!(sum, by_event, "{name} ({mode}): the totals are the functions' sums");
            if *mode == "events:pc:merges" {
                for f in p.functions.iter().filter(|f| f.is_instrumented()) {
                    // A block's frequency is the sum of its paths' counts, and agrees with bl's.
                    let g = bl_by_index[&f.index];
                    assert_eq!(block_frequencies(f), block_frequencies(g), "{name}: {:?}", f.name);
                    // A path is fixed by its last edge: two paths never share it.
                    let mut last_edges = std::collections::HashSet::new();
                    for path in f.paths() {
                        let last = (path.blocks.last().copied(), path.end);
                        assert!(last_edges.insert(last), "{name}: {:?} path {}", f.name, path.id);
                    }
                }
            }
            if *mode == "events" {
                let mut checked = 0;
                for f in p.functions.iter().filter(|f| f.is_instrumented()) {
                    let e = f.events().unwrap();
                    for (event, value) in &e.0 {
                        if let Some(want) = independent(&ops, f, bl_by_index[&f.index], event) {
                            assert_eq!(value.0, want, "{name}: {event} in {:?}", f.name);
                            checked += 1;
                        }
                    }
                }
                assert!(checked > 0);
            }
        }
        let (_, totals) = reference.unwrap();
        let instr: u64 = totals.values().map(|v| v.iter().find(|(n, _)| n == "instr").unwrap().1).sum();
        eprintln!("{name}: {} functions, {instr} operators executed", totals.len());
    }
}
