//! Mode `ippp`'s head space and each function's supergraph numbering [PPP07 §3.4.3–3.4.5]: where
//! every instrumented function's heads (its paths, handed to its caller) lie in one space for the
//! module, and which digit each call adds to its caller's supergraph path (see
//! [`pathprof_core::supergraph`]).

use super::analysis::Analysis;
use super::sink::Digit;
use crate::cfg::{FuncCfg, Special};
use crate::module::ModuleInfo;
use pathprof_core::supergraph::{max_radix_product, CallDigit, Supergraph};
use pathprof_core::FunctionPlan;
use wasmparser::FunctionBody;

/// The head space of a module: each defined function's `(offset, paths)` when it is instrumented.
pub(crate) struct Heads {
    functions: Vec<Option<(u64, u64)>>,
    /// The radix of a digit read in the whole space (its size + 2), when it fits in 64 bits.
    space_radix: Option<u64>,
}

/// Whether a host function of the import module `module` may call back into the program: WASI's
/// never do.
fn may_call_back(module: &str) -> bool {
    !(module.starts_with("wasi_snapshot_preview1")
        || module.starts_with("wasi_unstable")
        || module.starts_with("wasi:"))
}

impl Heads {
    /// The head space of the functions `analyses` instrument, in index order.
    pub fn new(analyses: &[Analysis]) -> Heads {
        let mut next = 0u128;
        let functions = analyses
            .iter()
            .map(|a| match a {
                Ok((_, Ok(planned))) => {
                    let paths = planned.plan.num_paths();
                    let offset = next;
                    next += u128::from(paths);
                    u64::try_from(offset).ok().map(|o| (o, paths))
                }
                _ => None,
            })
            .collect();
        let space_radix = next.checked_add(2).and_then(|r| u64::try_from(r).ok());
        Heads { functions, space_radix }
    }

    /// Where defined function `k`'s heads start.
    pub fn offset(&self, k: usize) -> u64 {
        self.functions[k].map_or(0, |(o, _)| o)
    }

    /// The supergraph of defined function `k` (`index`), planned as `plan`, and the digit of each of
    /// its calls in operator order (`None`: it adds none). A function whose supergraph IDs would not
    /// fit in 64 bits gets none.
    pub fn supergraph(
        &self,
        info: &ModuleInfo,
        k: usize,
        fcfg: &FuncCfg,
        body: &FunctionBody,
        plan: &FunctionPlan,
    ) -> (Supergraph, Vec<Option<Digit>>) {
        let paths = plan.num_paths();
        let head_offset = self.offset(k);
        let body_start = body.range().start as u64;
        let mut calls = Vec::new();
        let mut digits = Vec::new();
        let mut weight = vec![1u128; plan.dag.num_nodes() as usize];
        for &(op, special) in &fcfg.specials {
            let Special::Call { callee } = special else { continue };
            let at = body_start + u64::from(fcfg.op_offsets[op]);
            let b = fcfg.blocks.partition_point(|b| b.offset <= at);
            let block = b.checked_sub(1).filter(|&b| at < fcfg.blocks[b].end);
            let Some(block) = block else {
                // Unreachable: it never runs.
                digits.push(None);
                continue;
            };
            let (digit, call) = self.digit(info, callee);
            weight[block] = weight[block].saturating_mul(u128::from(call.radix));
            digits.push(Some(digit));
            calls.push(call);
        }
        let ids = u128::from(paths).saturating_mul(max_radix_product(&plan.dag, &weight));
        match u64::try_from(ids) {
            Ok(ids) if calls.iter().all(|c| c.radix > 0) => (Supergraph { paths, ids, head_offset, calls }, digits),
            _ => (Supergraph { paths, ids: paths, head_offset, calls: Vec::new() }, vec![None; digits.len()]),
        }
    }

    /// How a call of `callee` (`None`: indirect) is read, for the instrumenter and for the map; a
    /// radix of 0 when the space is too large to read it in.
    fn digit(&self, info: &ModuleInfo, callee: Option<u32>) -> (Digit, CallDigit) {
        let space = self.space_radix.unwrap_or(0);
        let anywhere = (Digit { radix: space, minus: u64::MAX }, CallDigit { radix: space, callee: None });
        match callee {
            Some(c) if c < info.num_imported_funcs => {
                if may_call_back(&info.import_modules[c as usize]) {
                    anywhere
                } else {
                    (Digit { radix: 1, minus: 0 }, CallDigit { radix: 1, callee: None })
                }
            }
            Some(c) => match self.functions[(c - info.num_imported_funcs) as usize] {
                Some((offset, paths)) => match paths.checked_add(1) {
                    Some(radix) => (Digit { radix, minus: offset }, CallDigit { radix, callee: Some(c) }),
                    None => anywhere,
                },
                None => anywhere,
            },
            None => anywhere,
        }
    }
}
