//! A profile's functions decoded from the counts a run recorded: every path ID regenerated to its
//! blocks, the edge counts they add up to, and, in mode `ppp`, the residual paths and untested edges.

use super::{ProbeState, Probes, ProfileMap, RawCounts};
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::ppp::PppPlan;
use pathprof_core::profile::{
    EdgeCount, EdgeKey, Endpoint, FunctionProfile, FunctionState, PathCount, PathProfile, PppFunction, U64,
};
use pathprof_core::regen;
use pathprof_core::FunctionPlan;
use std::collections::BTreeMap;

impl ProfileMap {
    /// The per-function profiles of what the module recorded.
    pub fn function_profiles(&self, counts: &RawCounts) -> Result<Vec<FunctionProfile>, CountsError> {
        self.functions
            .iter()
            .map(|f| {
                let state = match &f.state {
                    ProbeState::Instrumented(p) => FunctionState::Instrumented(
                        path_profile(p, counts.get(&f.index).map_or(&[], Vec::as_slice)).map_err(|e| match e {
                            CountsError::Overflow { what, .. } => CountsError::Overflow { function: f.index, what },
                            e => e,
                        })?,
                    ),
                    ProbeState::Skipped { reason } => FunctionState::Skipped { reason: reason.clone() },
                };
                Ok(FunctionProfile { index: f.index, name: f.name.clone(), blocks: f.blocks.clone(), state })
            })
            .collect()
    }
}

/// Why counts do not make a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CountsError {
    /// A recorded path ID that the function's numbering does not have.
    #[error("corrupt counters: {0}")]
    BadPathId(#[from] regen::BadPathId),
    /// A count that the counts of several places, or of several paths, add up to exceeds 2^64 - 1.
    #[error("{what} of function {function} exceeds 2^64 - 1")]
    Overflow { function: u32, what: &'static str },
}

/// The edges of a path through `blocks` that ends at `end`, as profiles key them: `(from, to)`.
fn edge_keys(blocks: &[u32], end: Endpoint) -> impl Iterator<Item = (u32, Endpoint)> + '_ {
    let steps = blocks.windows(2).map(|w| (w[0], Endpoint::Block(w[1])));
    steps.chain(blocks.last().map(move |&b| (b, end)))
}

/// The path profile of one function from its `(path ID, count)` pairs (a path may be counted in
/// several places, as a streamed function's singles and its stream: the counts add up): every path
/// regenerated to its blocks, and the edge counts they add up to.
fn path_profile(p: &Probes, list: &[(u64, u64)]) -> Result<PathProfile, CountsError> {
    let overflow = |what| CountsError::Overflow { function: 0, what };
    let mut paths = Vec::new();
    let mut edges: BTreeMap<(u32, Endpoint), u64> = BTreeMap::new();
    let mut increments_executed = 0u64;
    let out = p.plan.dag.out_edges();
    let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
    for &(id, count) in list {
        let c = merged.entry(id).or_insert(0);
        *c = c.checked_add(count).ok_or(overflow("a path count"))?;
    }
    for (id, count) in merged.into_iter().filter(|&(_, c)| c > 0) {
        let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id)?;
        let end = Endpoint::end(path.end);
        let on_path = path.edges.iter().filter(|&&e| is_increment(&p.plan, e)).count() as u64;
        increments_executed = on_path
            .checked_mul(count)
            .and_then(|n| increments_executed.checked_add(n))
            .ok_or(overflow("the increments executed"))?;
        let branches =
            path.edges[1..].iter().filter(|&&e| out[p.plan.dag.edges[e as usize].from as usize].len() > 1).count()
                as u32;
        for key in edge_keys(&path.blocks, end) {
            let c = edges.entry(key).or_insert(0);
            *c = c.checked_add(count).ok_or(overflow("an edge count"))?;
        }
        paths.push(PathCount {
            id: U64(id),
            count: U64(count),
            start: Endpoint::start(path.start),
            end,
            blocks: path.blocks,
            branches,
            interesting: p.ppp.as_ref().map(|ppp| ppp.interesting.binary_search(&id).is_ok()),
        });
    }
    paths.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
    let ppp = p.ppp.as_ref().map(|ppp| ppp_function(p, ppp, &paths).map(Box::new)).transpose()?;
    Ok(PathProfile {
        num_paths: U64(p.plan.num_paths()),
        counters: p.counters.kind(),
        cut_blocks: p.plan.overflow_cuts.clone(),
        paths,
        edges: edges.into_iter().map(|((from, to), c)| EdgeCount { from, to, count: U64(c) }).collect(),
        increments: if p.counters.has_path_register() {
            (0..p.plan.dag.edges.len() as u32).filter(|&e| is_increment(&p.plan, e)).count() as u32
        } else {
            0
        },
        increments_executed: U64(increments_executed),
        kipf: None,
        ppp,
        events: None,
    })
}

/// Mode `ppp`: a function's interesting paths, and the residual ones among `paths` (those marked
/// not interesting) with the edges they took that no interesting path takes.
fn ppp_function(p: &Probes, ppp: &PppPlan, paths: &[PathCount]) -> Result<PppFunction, CountsError> {
    let (residual_paths, residual_executions) = pathprof_core::profile::residual(paths)
        .ok_or(CountsError::Overflow { function: 0, what: "the residual executions" })?;
    let residual: Vec<&PathCount> = paths.iter().filter(|x| x.interesting == Some(false)).collect();
    let mut untested_edges = 0;
    let mut untested_list = Vec::new();
    if !residual.is_empty() {
        // The interesting paths need not have run: regenerated from their IDs.
        let mut tested = std::collections::HashSet::new();
        for &id in &ppp.interesting {
            let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id)?;
            tested.extend(edge_keys(&path.blocks, Endpoint::end(path.end)));
        }
        let mut untested = std::collections::HashSet::new();
        for r in &residual {
            untested.extend(edge_keys(&r.blocks, r.end).filter(|k| !tested.contains(k)));
        }
        untested_edges = untested.len() as u64;
        untested_list = untested.into_iter().map(|(from, to)| EdgeKey { from, to }).collect();
        untested_list.sort_unstable();
    }
    let numbering = ppp.numbering.as_ref();
    Ok(PppFunction {
        interesting: ppp.interesting.len() as u64,
        range: numbering.map_or(0, |n| n.slots.len() as u64),
        delta: numbering.and_then(|n| n.delta()),
        residual_paths,
        residual_executions,
        untested_edges,
        untested: untested_list,
    })
}

/// Whether DAG edge `e` carries an increment of the path register: a non-zero increment on an edge
/// of the CFG (a path start sets the register at its header instead).
fn is_increment(plan: &FunctionPlan, e: u32) -> bool {
    !matches!(plan.dag.edges[e as usize].kind, DagEdgeKind::Start(_) | DagEdgeKind::Real(u32::MAX))
        && plan.placement.inc[e as usize] != 0
}

#[cfg(test)]
mod tests {

    /// A map with a loop header, a landing, a throw edge and events reads back as written, blocks
    /// written short but for those with events.
    #[test]
    fn maps_read_back_as_written() {
        let wat = r#"(module
          (tag $e)
          (func $f (param $n i32)
            block $h
              try_table (catch $e $h)
                loop $l
                  local.get $n
                  i32.const 1
                  i32.sub
                  local.tee $n
                  br_if $l
                end
                throw $e
              end
            end))"#;
        let bytes = wat::parse_str(wat).unwrap();
        let events = crate::events::EventSet::new(&crate::events::EventSpec::default(), &Default::default()).unwrap();
        for options in [
            crate::InstrumentOptions::default(),
            crate::InstrumentOptions {
                events: Some(events),
                ..crate::InstrumentOptions::with_sink(crate::SinkKind::Decode)
            },
        ] {
            let map = crate::instrument(&bytes, &options).unwrap().map;
            let f = &map.functions[0];
            assert!(f.blocks.iter().any(|b| b.loop_header) && f.blocks.iter().any(|b| b.landing));
            let plan = &f.probes().unwrap().plan;
            assert!(plan.dag.edges.iter().any(|e| matches!(e.kind, pathprof_core::dag::DagEdgeKind::Throw(_))));
            let text = map.to_json();
            assert_eq!(ProfileMap::from_json(&text).unwrap(), map);
            let short = f.blocks.iter().all(|b| b.events.is_empty());
            assert_eq!(text.contains(r#""blocks":[["#), short, "{text}");
        }
    }

    use super::*;
    use crate::{instrument, InstrumentOptions};

    /// Counts of one path from two places that add up past 2^64 - 1 are refused, not saturated.
    #[test]
    fn counts_past_64_bits_are_an_error() {
        let wasm = wat::parse_str(r#"(module (func (export "f") (param i32) (if (local.get 0) (then nop))))"#).unwrap();
        let map = instrument(&wasm, &InstrumentOptions::default()).unwrap().map;
        let counts = |list: Vec<(u64, u64)>| -> RawCounts { [(0, list)].into_iter().collect() };
        let profiles = map.function_profiles(&counts(vec![(0, u64::MAX - 1), (0, 1)])).unwrap();
        assert_eq!(profiles[0].paths().iter().map(|p| p.count.0).max(), Some(u64::MAX));
        let err = map.function_profiles(&counts(vec![(0, u64::MAX), (0, 1)])).unwrap_err();
        assert_eq!(err, CountsError::Overflow { function: 0, what: "a path count" });
        assert_eq!(err.to_string(), "a path count of function 0 exceeds 2^64 - 1");
        // Two paths through the same edges whose counts add up past 2^64 - 1.
        let err = map.function_profiles(&counts(vec![(0, u64::MAX), (1, 1)])).unwrap_err();
        assert_eq!(err, CountsError::Overflow { function: 0, what: "an edge count" });
        assert!(matches!(map.function_profiles(&counts(vec![(9, 1)])), Err(CountsError::BadPathId(_))));
    }

    /// A path that runs two increments u64::MAX times executed more increments than 64 bits count.
    #[test]
    fn increments_executed_past_64_bits_are_an_error() {
        let wasm = wat::parse_str(
            r#"(module (func (export "f") (param i32)
                 (if (local.get 0) (then nop))
                 (if (i32.eqz (local.get 0)) (then nop))))"#,
        )
        .unwrap();
        let map = instrument(&wasm, &InstrumentOptions::default()).unwrap().map;
        let p = map.functions[0].probes().unwrap();
        let on_path = |id: u64| {
            let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id).unwrap();
            path.edges.iter().filter(|&&e| is_increment(&p.plan, e)).count()
        };
        let ids: Vec<u64> = (0..p.plan.num_paths()).collect();
        assert!(ids.iter().any(|&id| on_path(id) >= 2), "no path with two increments");
        for id in ids {
            let counts: RawCounts = [(0, vec![(id, u64::MAX)])].into_iter().collect();
            match map.function_profiles(&counts) {
                Ok(profiles) => {
                    assert!(on_path(id) <= 1);
                    assert_eq!(profiles[0].profiled().unwrap().increments_executed.0, u64::MAX * on_path(id) as u64);
                }
                Err(e) => {
                    assert!(on_path(id) >= 2);
                    assert_eq!(e, CountsError::Overflow { function: 0, what: "the increments executed" });
                }
            }
        }
    }
}
