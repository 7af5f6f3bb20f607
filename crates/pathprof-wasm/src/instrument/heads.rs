//! Mode `ippp`'s head space and each function's supergraph numbering [PPP07 §3.4.3–3.4.5]: where
//! every instrumented function's heads (its paths, handed to its caller) lie in one space for the
//! module, and which digit each call adds to its caller's supergraph path (see
//! [`pathprof_core::supergraph`]).
//!
//! Functions a table or a reference may hold come first in the space, so that a `call_indirect` or
//! `call_ref` reads its digit in their part of it only — unless one of them has no probes or is a
//! host function that may call back, which may let any function take the call; a call that may
//! reach any function (a host function that may call back, a function without probes) reads its
//! digit in the whole space.

use super::analysis::Analysis;
use super::sink::Digit;
use crate::cfg::{FuncCfg, Special};
use crate::module::ModuleInfo;
use pathprof_core::supergraph::{entry_paths, max_radix_product, CallDigit, Supergraph};
use pathprof_core::FunctionPlan;
use std::collections::HashSet;
use wasmparser::FunctionBody;

/// The head space of a module.
pub(crate) struct Heads {
    /// Each defined function's `(offset, paths from its entry)` when it is instrumented.
    functions: Vec<Option<(u64, u64)>>,
    /// The radices of a digit read in the part of the space that references may reach, and in the
    /// whole space (the part's size + 2); 0 when it does not fit in 64 bits.
    referenced_radix: u64,
    space_radix: u64,
}

/// Whether the host functions of import module `module` may call back into the program: those
/// pathprof's host provides (WASI's, Sightglass's `bench`) never do.
fn may_call_back(module: &str) -> bool {
    !(module.starts_with("wasi_snapshot_preview1")
        || module.starts_with("wasi_unstable")
        || module.starts_with("wasi:")
        || module == "bench")
}

impl Heads {
    /// The head space of the functions `analyses` instrument: those that `info` or their code
    /// reference first, then the others, each in index order.
    pub fn new(info: &ModuleInfo, analyses: &[Analysis]) -> Heads {
        let mut referenced: HashSet<u32> = info.referenced_funcs.iter().copied().collect();
        for (fcfg, _) in analyses.iter().flatten() {
            for &(_, special) in &fcfg.specials {
                if let Special::RefFunc { func } = special {
                    referenced.insert(func);
                }
            }
        }
        // Only paths from the entry are heads.
        let paths = |a: &Analysis| match a {
            Ok((_, Ok(planned))) => Some(entry_paths(&planned.plan.dag, &planned.plan.numbering).1),
            _ => None,
        };
        let mut functions = vec![None; analyses.len()];
        let mut next = 0u128;
        let mut referenced_size = 0u128;
        for first in [true, false] {
            for (k, a) in analyses.iter().enumerate() {
                let index = info.num_imported_funcs + k as u32;
                if referenced.contains(&index) != first {
                    continue;
                }
                if let Some(n) = paths(a) {
                    functions[k] = u64::try_from(next).ok().map(|o| (o, n));
                    next += u128::from(n);
                }
            }
            if first {
                referenced_size = next;
            }
        }
        let radix = |size: u128| size.checked_add(2).and_then(|r| u64::try_from(r).ok()).unwrap_or(0);
        // A referenced function without probes, or a host function that may call back, lets any
        // function take an indirect call: such calls then read the whole space.
        let any = referenced.iter().any(|&f| match f.checked_sub(info.num_imported_funcs) {
            None => info.import_modules.get(f as usize).is_some_and(|m| may_call_back(m)),
            Some(k) => functions.get(k as usize).is_some_and(Option::is_none),
        });
        let referenced_radix = if any { radix(next) } else { radix(referenced_size) };
        Heads { functions, referenced_radix, space_radix: radix(next) }
    }

    /// Where defined function `k`'s heads start.
    pub fn offset(&self, k: usize) -> u64 {
        self.functions[k].map_or(0, |(o, _)| o)
    }

    /// The supergraph of defined function `k`, planned as `plan`, and the digit of each of its calls
    /// in operator order (`None`: it adds none). A function whose supergraph IDs would not fit in 64
    /// bits gets no digits.
    pub fn supergraph(
        &self,
        info: &ModuleInfo,
        k: usize,
        fcfg: &FuncCfg,
        body: &FunctionBody,
        plan: &FunctionPlan,
    ) -> (Supergraph, Vec<Option<Digit>>) {
        let paths = plan.num_paths();
        let (entry_base, entry_paths) = entry_paths(&plan.dag, &plan.numbering);
        let head_offset = self.offset(k);
        let body_start = body.range().start as u64;
        let mut calls = Vec::new();
        let mut digits = Vec::new();
        let mut weight = vec![1u128; plan.dag.num_nodes() as usize];
        for &(op, special) in &fcfg.specials {
            let Special::Call { callee } = special else { continue };
            let at = body_start + u64::from(fcfg.op_offsets[op]);
            let b = fcfg.blocks.partition_point(|b| b.offset <= at);
            let Some(block) = b.checked_sub(1).filter(|&b| at < fcfg.blocks[b].end) else {
                // Unreachable: it never runs.
                digits.push(None);
                continue;
            };
            let (digit, call) = self.digit(info, callee);
            weight[block] = weight[block].saturating_mul(u128::from(call.radix));
            digits.push((digit.radix > 1).then_some(digit));
            calls.push(call);
        }
        let ids = u128::from(paths).saturating_mul(max_radix_product(&plan.dag, &weight));
        match u64::try_from(ids) {
            Ok(ids) if calls.iter().all(|c| c.radix > 0) => {
                (Supergraph { paths, entry_base, entry_paths, ids, head_offset, calls }, digits)
            }
            _ => {
                let calls = Vec::new();
                (
                    Supergraph { paths, entry_base, entry_paths, ids: paths, head_offset, calls },
                    vec![None; digits.len()],
                )
            }
        }
    }

    /// How a call of `callee` (`None`: indirect) is read, for the instrumenter and for the map; a
    /// radix of 0 when its space is too large to read it in.
    fn digit(&self, info: &ModuleInfo, callee: Option<u32>) -> (Digit, CallDigit) {
        // The head + 1 (see `Supergraph`).
        let anywhere = |radix| (Digit { radix, minus: u64::MAX }, CallDigit { radix, callee: None });
        match callee {
            Some(c) if c < info.num_imported_funcs => {
                if may_call_back(&info.import_modules[c as usize]) {
                    anywhere(self.space_radix)
                } else {
                    (Digit { radix: 1, minus: 0 }, CallDigit { radix: 1, callee: None })
                }
            }
            // An instrumented callee always takes the call and publishes one of its paths: the
            // digit is the path.
            Some(c) => match self.functions[(c - info.num_imported_funcs) as usize] {
                Some((offset, paths)) => {
                    let radix = paths.max(1);
                    (Digit { radix, minus: offset.wrapping_add(1) }, CallDigit { radix, callee: Some(c) })
                }
                None => anywhere(self.space_radix),
            },
            None => anywhere(self.referenced_radix),
        }
    }
}
