//! Mode `ippp`'s head space and each function's supergraph numbering [PPP07 §3.4.3–3.4.5]: where
//! every instrumented function's heads (its paths, handed to its caller) lie in one space for the
//! module, and which digit each call adds to its caller's supergraph path (see
//! [`pathprof_core::supergraph`]).
//!
//! Functions a table or a reference may hold come first in the space, grouped by type, so that a
//! `call_indirect` or `call_ref` reads its digit in their part of it only — in the part of the
//! functions of its type when only functions of an equal type can match it
//! ([`ModuleInfo::type_classes`]) — unless one of them has no probes or is a host function that may
//! call back, which may let any function take the call; a call that may reach any function (a host
//! function that may call back, a function without probes) reads its digit in the whole space.
//!
//! Where a function without probes or a host function that may call back can stand between a call
//! and the function that takes it, it may go on to run other functions once the taker has published
//! its head, whose own calls use the head word: every call that arms the word then puts back what
//! the word held before it, so that a published head outlives the calls that follow it. A tail call
//! does the same: the function making it publishes its head before it leaves, and the function it
//! enters (which takes no call: the word is not armed) runs before the caller reads the head.

use super::analysis::Analysis;
use super::sink::Digit;
use crate::cfg::{FuncCfg, SiteKind, Special};
use crate::module::ModuleInfo;
use pathprof_core::supergraph::{
    entry_paths, heaviest_path, CallDigit, CallsByBlock, HeadSpace, InterestingPath, Supergraph, SupergraphPpp,
};
use pathprof_core::FunctionPlan;
use std::collections::{HashMap, HashSet};
use wasmparser::FunctionBody;

/// The head space of a module.
pub(crate) struct Heads {
    /// Each defined function's `(offset, paths from its entry)` when it is instrumented.
    functions: Vec<Option<(u64, u64)>>,
    /// The radices of a digit read in the part of the space that references may reach, and in the
    /// whole space (the part's size + 2); 0 when it does not fit in 64 bits.
    referenced_radix: u64,
    space_radix: u64,
    /// By type class, where its referenced functions' heads start and the radix of a digit read
    /// among them; `None` when indirect calls read the whole space.
    classes: Option<HashMap<u32, (u64, u64)>>,
    /// Whether a function without probes, a host function that may call back or a tail call is in
    /// the module: calls that arm the head word then restore it.
    interposed: bool,
    /// The space, to read heads in.
    space: HeadSpace,
}

/// Most digits of all the calls of one function whose weights a preferential numbering of its
/// supergraph paths may take (a table of weights per call).
const MAX_DIGIT_WEIGHTS: u64 = 1 << 18;

/// A function's supergraph, with what the instrumenter needs of its calls.
pub(crate) struct FunctionSupergraph {
    pub supergraph: Supergraph,
    /// The digit of every call in operator order (`None`: it never runs; radix 1: it adds none).
    pub digits: Vec<Option<Digit>>,
    /// For each call of the supergraph, its index among `digits`.
    pub sites: Vec<usize>,
    /// The calls of the supergraph by block.
    pub by_block: CallsByBlock,
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
    /// reference first, by type class, then the others, each in index order.
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
        let entries = |a: &Analysis| match a {
            Ok((_, Ok(planned))) => Some(entry_paths(&planned.plan.dag, &planned.plan.numbering)),
            _ => None,
        };
        let paths = |a: &Analysis| entries(a).map(|e| e.1);
        let class = |f: u32| info.func_types.get(f as usize).and_then(|&t| info.type_classes.get(t as usize)?.as_ref());
        // The referenced functions by type class (those of no class last), then the others, each
        // in index order: `(unreferenced, class, k)`.
        let mut order: Vec<(bool, Option<u32>, usize)> = (0..analyses.len())
            .map(|k| {
                let index = info.num_imported_funcs + k as u32;
                let referenced = referenced.contains(&index);
                (!referenced, class(index).copied().filter(|_| referenced), k)
            })
            .collect();
        order.sort_unstable_by_key(|&(unreferenced, class, k)| (unreferenced, class.is_none(), class, k));
        let mut functions = vec![None; analyses.len()];
        let mut next = 0u128;
        let mut referenced_size = 0u128;
        let mut class_spans: HashMap<u32, (u128, u128)> = HashMap::new();
        for &(unreferenced, class, k) in &order {
            if let Some(n) = paths(&analyses[k]) {
                if let Some(c) = class {
                    class_spans.entry(c).or_insert((next, 0)).1 += u128::from(n);
                }
                functions[k] = u64::try_from(next).ok().map(|o| (o, n));
                next += u128::from(n);
            }
            if !unreferenced {
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
        // A function that makes a tail call publishes its head before the call, and the function
        // it enters runs before the caller reads it: its calls, and those of every function it
        // calls in turn, must put back the word as around a function without probes.
        let tail_calls = analyses
            .iter()
            .flatten()
            .any(|(fcfg, _)| fcfg.sites.iter().any(|s| matches!(s.kind, SiteKind::TailCall(_))));
        let interposed =
            tail_calls || info.import_modules.iter().any(|m| may_call_back(m)) || functions.iter().any(Option::is_none);
        let classes = (!any).then(|| {
            class_spans
                .into_iter()
                .filter_map(|(c, (start, size))| Some((c, (u64::try_from(start).ok()?, radix(size)))))
                .collect()
        });
        let space = HeadSpace::new(functions.iter().enumerate().filter_map(|(k, f)| {
            let (offset, entry_paths) = (*f)?;
            let (entry_base, _) = entries(&analyses[k])?;
            let function = info.num_imported_funcs + k as u32;
            Some(pathprof_core::supergraph::Heads { function, offset, entry_base, entry_paths, keys: 1 })
        }));
        Heads { functions, referenced_radix, space_radix: radix(next), classes, interposed, space }
    }

    /// The preferential numbering of the supergraph paths of a function planned as `plan` with
    /// supergraph `s` whose `paths` are interesting, within `max_slots` slots; `None` without
    /// interesting supergraph paths, or when they would take too many slots or weights.
    pub fn preferential(
        &self,
        s: &FunctionSupergraph,
        plan: &FunctionPlan,
        paths: Option<&Vec<InterestingPath>>,
        max_slots: u64,
    ) -> Option<SupergraphPpp> {
        let sg = &s.supergraph;
        let weights: u64 = sg.calls.iter().filter(|c| c.adds_digit()).map(|c| c.radix).sum();
        if weights > MAX_DIGIT_WEIGHTS {
            return None;
        }
        let ids = SupergraphPpp::interesting_ids(sg, plan, &s.by_block, &self.space, paths?, max_slots as usize);
        if ids.is_empty() {
            return None;
        }
        SupergraphPpp::build(plan, sg, &s.by_block, ids, max_slots).ok().flatten()
    }

    /// Where defined function `k`'s heads start.
    pub fn offset(&self, k: usize) -> u64 {
        self.functions[k].map_or(0, |(o, _)| o)
    }

    /// The supergraph of defined function `k`, planned as `plan`, and the digit of each of its calls
    /// in operator order (`None`: it never runs; radix 1: it adds none). Where its supergraph IDs would not fit in 64 bits,
    /// calls are dropped (they add no digit) until they do, each the call of the largest radix on
    /// the path whose radices have the largest product — of those that no segment of the
    /// `interesting` paths takes, while there are some [PPP07 §3.4.3: the numbering truncates no
    /// edge an interesting segment takes].
    pub fn supergraph(
        &self,
        info: &ModuleInfo,
        k: usize,
        fcfg: &FuncCfg,
        body: &FunctionBody,
        plan: &FunctionPlan,
        interesting: Option<&Vec<InterestingPath>>,
    ) -> FunctionSupergraph {
        let paths = plan.num_paths();
        let (entry_base, entry_paths) = entry_paths(&plan.dag, &plan.numbering);
        let head_offset = self.offset(k);
        let body_start = body.range().start as u64;
        // Each reachable call: its digit's index, its block, and how it is read.
        let mut sites: Vec<(usize, usize, Digit, CallDigit)> = Vec::new();
        let mut digits = Vec::new();
        for &(op, special) in &fcfg.specials {
            let Special::Call { callee, signature } = special else { continue };
            let at = body_start + u64::from(fcfg.op_offsets[op]);
            let b = fcfg.blocks.partition_point(|b| b.offset <= at);
            if let Some(block) = b.checked_sub(1).filter(|&b| at < fcfg.blocks[b].end) {
                let (digit, call) = self.digit(info, callee, signature);
                sites.push((digits.len(), block, digit, call));
            }
            // An unreachable call never runs.
            digits.push(None);
        }
        // A call whose space is too large to read it in is dropped; so is, while the IDs would not fit
        // in 64 bits, the call of the largest radix on the path of the largest product.
        let drop = |site: &mut (usize, usize, Digit, CallDigit)| {
            site.3 = CallDigit { radix: 1, dropped: true, ..site.3 };
        };
        sites.iter_mut().filter(|s| s.3.radix == 0).for_each(drop);
        // The calls (by their place among `sites`) where interesting segments are rooted.
        let blocks: Vec<u32> = sites.iter().map(|s| s.1 as u32).collect();
        let by_block = CallsByBlock::new(&blocks);
        let mut taken = HashSet::new();
        for p in interesting.into_iter().flatten() {
            let Ok(path) = pathprof_core::regen::regenerate(&plan.dag, &plan.numbering, p.path) else { continue };
            let calls = by_block.on(&path.blocks);
            taken.extend(calls.iter().zip(&p.heads).filter(|(_, heads)| !heads.is_empty()).map(|(&c, _)| c));
        }
        // A function that may throw keeps one key past every path's digits for the paths that end
        // while a call unwinds.
        let throws = fcfg.cfg.throws();
        let (ids, product) = loop {
            let mut weight = vec![1u128; plan.dag.num_nodes() as usize];
            for &(_, block, _, call) in &sites {
                weight[block] = weight[block].saturating_mul(u128::from(call.radix));
            }
            let (product, path) = heaviest_path(&plan.dag, &weight);
            let keys = if throws { product.saturating_add(1) } else { product };
            if let Ok(ids) = u64::try_from(u128::from(paths).saturating_mul(keys)) {
                break (ids, product as u64);
            }
            let on_path: HashSet<usize> = path.iter().map(|&b| b as usize).collect();
            let victim = (sites.iter_mut().enumerate())
                .filter(|(_, s)| !s.3.dropped && on_path.contains(&s.1))
                .max_by_key(|(c, s)| (!taken.contains(c), s.3.radix, std::cmp::Reverse(s.0)))
                .map(|(_, s)| s);
            match victim {
                Some(site) => drop(site),
                // The paths alone are too many for 64 bits (a plan never has so many).
                None => break (paths, 1),
            }
        };
        for &(i, _, digit, call) in &sites {
            // A call that adds no digit keeps whether it restores the word (see `SupergraphSink`).
            digits[i] = Some(if call.adds_digit() { digit } else { Digit { radix: 1, ..digit } });
        }
        let at = sites.iter().map(|s| s.0).collect();
        let unwound = (throws && !sites.is_empty()).then_some(product);
        let calls = sites.into_iter().map(|s| s.3).collect();
        FunctionSupergraph {
            supergraph: Supergraph { paths, entry_base, entry_paths, ids, head_offset, calls, unwound, levels: Vec::new() },
            digits,
            sites: at,
            by_block,
        }
    }

    /// How a call of `callee` (`None`: indirect, of type `signature`) is read, for the instrumenter
    /// and for the map; a radix of 0 when its space is too large to read it in.
    fn digit(&self, info: &ModuleInfo, callee: Option<u32>, signature: Option<u32>) -> (Digit, CallDigit) {
        // The head + 1, less `base` when published (see `Supergraph`).
        let within = |radix, base| {
            let digit = Digit { radix, minus: u64::MAX, rebase: base, restore: self.interposed, weights: None };
            (digit, CallDigit { radix, callee: None, base, dropped: false })
        };
        match callee {
            Some(c) if c < info.num_imported_funcs => {
                if may_call_back(&info.import_modules[c as usize]) {
                    within(self.space_radix, 0)
                } else {
                    (
                        Digit { radix: 1, minus: 0, rebase: 0, restore: false, weights: None },
                        CallDigit { radix: 1, callee: None, base: 0, dropped: false },
                    )
                }
            }
            // An instrumented callee always takes the call and publishes one of its paths: the
            // digit is the path.
            Some(c) => match self.functions[(c - info.num_imported_funcs) as usize] {
                Some((offset, paths)) => {
                    let radix = paths.max(1);
                    let digit = Digit {
                        radix,
                        minus: offset.wrapping_add(1),
                        rebase: 0,
                        restore: self.interposed,
                        weights: None,
                    };
                    (digit, CallDigit { radix, callee: Some(c), base: 0, dropped: false })
                }
                None => within(self.space_radix, 0),
            },
            None => {
                let class = signature.and_then(|t| info.type_classes.get(t as usize).copied().flatten());
                match (class, &self.classes) {
                    // No instrumented function of the call's type is in a table: the call traps or
                    // calls a host function that does not call back.
                    (Some(c), Some(classes)) => {
                        let (base, radix) = classes.get(&c).copied().unwrap_or((0, 2));
                        within(radix, base)
                    }
                    _ => within(self.referenced_radix, 0),
                }
            }
        }
    }
}
