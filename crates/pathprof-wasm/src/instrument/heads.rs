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
use super::sink::{Digit, Read};
use crate::cfg::{FuncCfg, SiteKind, Special};
use crate::module::ModuleInfo;
use pathprof_core::ips::MAX_DEPTH;
use pathprof_core::supergraph::{
    entry_paths, first_positions, max_high_words, CallDigit, CallsByBlock, HeadLevel, HeadNames, HeadSpace,
    InterestingPath, Supergraph, SupergraphPpp, Taken,
};
use pathprof_core::FunctionPlan;
use std::collections::{HashMap, HashSet};

mod fit;

use fit::{fair_shares, Bound, Fitted, Fitter};

/// The head space of a module: one per depth of the heads its functions publish (1 for segments
/// of one call, `k` for segments of `k`).
pub(crate) struct Heads {
    levels: Vec<Level>,
    /// Each defined function's heads of depth 1 to `k − 1`: the digits its calls read at each,
    /// with how each is read.
    deeper: Vec<Vec<(HeadLevel, Vec<Option<Read>>)>>,
    /// Each defined function's calls, when it is instrumented.
    sites: Vec<Option<Sites>>,
    /// Whether a function without probes, a host function that may call back or a tail call is in
    /// the module: calls that arm the head words then restore them.
    interposed: bool,
    /// The module's imported functions, which come before the defined ones.
    imported: u32,
    /// For segments of more than one call: the calls (their indices among the function's) on each
    /// first path that interesting segments take, by function and path, to name their heads.
    entry_calls: HashMap<(u32, u64), Vec<usize>>,
}

/// The heads interesting segments name, for their compact slots ([`Heads::preferential`]).
impl HeadNames for Heads {
    fn space(&self, depth: usize) -> Option<&HeadSpace> {
        self.levels.get(depth).map(|l| &l.space)
    }

    fn level(&self, function: u32, depth: usize) -> Option<&HeadLevel> {
        let k = function.checked_sub(self.imported)? as usize;
        self.deeper.get(k)?.get(depth.checked_sub(1)?).map(|(level, _)| level)
    }

    fn calls_on(&self, function: u32, path: u64) -> Option<Vec<usize>> {
        self.entry_calls.get(&(function, path)).cloned()
    }
}

/// The first paths (function and path) that `taken` names, at every depth, into `out`.
fn entered(taken: &Taken, out: &mut HashSet<(u32, u64)>) {
    if let Taken::Entered { function, path, calls } = taken {
        out.insert((*function, *path));
        calls.iter().for_each(|t| entered(t, out));
    }
}

/// The heads of one depth.
struct Level {
    depth: u8,
    /// Each defined function's `(offset, heads it may publish)` when it is instrumented.
    functions: Vec<Option<(u64, u64)>>,
    /// The radices of a digit read in the part of the space that references may reach, and in the
    /// whole space (the part's size + 2); 0 when it does not fit in 64 bits.
    referenced_radix: u64,
    space_radix: u64,
    /// By type class, where its referenced functions' heads start and the radix of a digit read
    /// among them; `None` when indirect calls read the whole space.
    classes: Option<HashMap<u32, (u64, u64)>>,
    /// The space, to read heads in.
    space: HeadSpace,
}

/// A function's reachable calls: for each, its index among the function's calls (in operator
/// order), its block, its callee (`None`: indirect) and its type.
struct Sites {
    sites: Vec<(usize, usize, Option<u32>, Option<u32>)>,
    /// For each, the fewest calls before it on a path from the entry (`None`: no such path
    /// reaches it); empty where heads have depth 0 only, which do not read them.
    positions: Vec<Option<u32>>,
    /// The function's calls, reachable or not.
    calls: usize,
}

impl Sites {
    /// The calls of a function whose body starts at `body_start`, with their positions when
    /// `plan` is given.
    fn new(fcfg: &FuncCfg, body_start: u64, plan: Option<&FunctionPlan>) -> Sites {
        let mut sites = Vec::new();
        let mut calls = 0;
        for &(op, special) in &fcfg.specials {
            let Special::Call { callee, signature } = special else { continue };
            let at = body_start + u64::from(fcfg.op_offsets[op]);
            let b = fcfg.blocks.partition_point(|b| b.offset <= at);
            // An unreachable call never runs.
            if let Some(block) = b.checked_sub(1).filter(|&b| at < fcfg.blocks[b].end) {
                sites.push((calls, block, callee, signature));
            }
            calls += 1;
        }
        let Some(plan) = plan else { return Sites { sites, positions: Vec::new(), calls } };
        let mut by_block = vec![0u32; fcfg.blocks.len()];
        for s in &sites {
            by_block[s.1] += 1;
        }
        let first = first_positions(&plan.dag, &by_block);
        let mut seen = vec![0u32; fcfg.blocks.len()];
        let positions = (sites.iter())
            .map(|s| {
                let before = seen[s.1];
                seen[s.1] += 1;
                first.get(s.1).copied().flatten().map(|p| p + before)
            })
            .collect();
        Sites { sites, positions, calls }
    }
}

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

/// The order of the defined functions in every depth's space: those that `info` or their code
/// reference first, by type class (those of no class last), then the others, each in index order —
/// `(unreferenced, class, k)`.
fn space_order(info: &ModuleInfo, analyses: &[Analysis], referenced: &HashSet<u32>) -> Vec<(bool, Option<u32>, usize)> {
    let class = |f: u32| info.func_types.get(f as usize).and_then(|&t| info.type_classes.get(t as usize)?.as_ref());
    let mut order: Vec<(bool, Option<u32>, usize)> = (0..analyses.len())
        .map(|k| {
            let index = info.num_imported_funcs + k as u32;
            let referenced = referenced.contains(&index);
            (!referenced, class(index).copied().filter(|_| referenced), k)
        })
        .collect();
    order.sort_unstable_by_key(|&(unreferenced, class, k)| (unreferenced, class.is_none(), class, k));
    order
}

impl Level {
    /// The space of depth `depth` of the defined functions in `order`: `bases` gives each one's
    /// `(entry_base, entry_paths)` (`None`: not instrumented), and `keys` its heads per path from
    /// the entry.
    fn new(
        info: &ModuleInfo,
        referenced: &HashSet<u32>,
        order: &[(bool, Option<u32>, usize)],
        bases: &[Option<(u64, u64)>],
        keys: &[u64],
        depth: u8,
    ) -> Level {
        let mut functions = vec![None; bases.len()];
        let mut next = 0u128;
        let mut referenced_size = 0u128;
        let mut class_spans: HashMap<u32, (u128, u128)> = HashMap::new();
        for &(unreferenced, class, k) in order {
            if let Some((_, n)) = bases[k] {
                let size = u128::from(n) * u128::from(keys[k]);
                if let Some(c) = class {
                    class_spans.entry(c).or_insert((next, 0)).1 += size;
                }
                functions[k] = u64::try_from(next).ok().zip(u64::try_from(size).ok());
                next += size;
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
            Some(k) => bases.get(k as usize).is_some_and(Option::is_none),
        });
        let referenced_radix = if any { radix(next) } else { radix(referenced_size) };
        let classes = (!any).then(|| {
            class_spans
                .into_iter()
                .filter_map(|(c, (start, size))| Some((c, (u64::try_from(start).ok()?, radix(size)))))
                .collect()
        });
        let space = HeadSpace::new(functions.iter().enumerate().filter_map(|(k, f)| {
            let (offset, _) = (*f)?;
            let (entry_base, entry_paths) = bases[k]?;
            let function = info.num_imported_funcs + k as u32;
            Some(pathprof_core::supergraph::Heads { function, offset, entry_base, entry_paths, keys: keys[k] })
        }));
        Level { depth, functions, referenced_radix, space_radix: radix(next), classes, space }
    }

    /// How a call of `callee` (`None`: indirect, of type `signature`) reads its digit in this
    /// space, for the instrumenter and for the map; a radix of 0 when the space is too large to
    /// read it in.
    fn read(&self, info: &ModuleInfo, callee: Option<u32>, signature: Option<u32>) -> (Read, CallDigit) {
        // The head + 1, less `base` when published (see `Supergraph`).
        let within = |radix, base| {
            let read = Read { radix, minus: u64::MAX, rebase: base, word: self.depth };
            (read, CallDigit { radix, callee: None, base, dropped: false, word: 0 })
        };
        match callee {
            Some(c) if c < info.num_imported_funcs => {
                if may_call_back(&info.import_modules[c as usize]) {
                    within(self.space_radix, 0)
                } else {
                    (Read::NONE, CallDigit { radix: 1, callee: None, base: 0, dropped: false, word: 0 })
                }
            }
            // An instrumented callee always takes the call and publishes one of its heads: the
            // digit is the head.
            Some(c) => match self.functions[(c - info.num_imported_funcs) as usize] {
                Some((offset, size)) => {
                    let radix = size.max(1);
                    let read = Read { radix, minus: offset.wrapping_add(1), rebase: 0, word: self.depth };
                    (read, CallDigit { radix, callee: Some(c), base: 0, dropped: false, word: 0 })
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

impl Heads {
    /// The head spaces, of depths 0 to `depth − 1`, of the functions `analyses` instrument (their
    /// bodies starting at `body_starts`), with the calls on the first paths that the `interesting`
    /// segments take.
    pub fn new(
        info: &ModuleInfo,
        analyses: &[Analysis],
        body_starts: &[u64],
        depth: usize,
        interesting: &HashMap<u32, Vec<InterestingPath>>,
    ) -> Heads {
        let mut referenced: HashSet<u32> = info.referenced_funcs.iter().copied().collect();
        for (fcfg, _) in analyses.iter().flatten() {
            for &(_, special) in &fcfg.specials {
                if let Special::RefFunc { func } = special {
                    referenced.insert(func);
                }
            }
        }
        fn planned(a: &Analysis) -> Option<(&FuncCfg, &FunctionPlan)> {
            match a {
                Ok((fcfg, Ok(planned))) => Some((fcfg, &planned.plan)),
                _ => None,
            }
        }
        // Only paths from the entry are heads.
        let bases: Vec<Option<(u64, u64)>> =
            analyses.iter().map(|a| planned(a).map(|(_, plan)| entry_paths(&plan.dag, &plan.numbering))).collect();
        let order = space_order(info, analyses, &referenced);
        let mut levels = vec![Level::new(info, &referenced, &order, &bases, &vec![1; analyses.len()], 0)];
        let mut deeper: Vec<Vec<(HeadLevel, Vec<Option<Read>>)>> = vec![Vec::new(); analyses.len()];
        // Heads of depth 1 and more read the calls' positions.
        let sites: Vec<Option<Sites>> = (analyses.iter().zip(body_starts))
            .map(|(a, &start)| planned(a).map(|(fcfg, plan)| Sites::new(fcfg, start, (depth > 1).then_some(plan))))
            .collect();
        if depth > 1 {
            // Every function's heads of a depth fit in that depth's space, whose radix (its size + 2)
            // fits in 64 bits: each function takes what its heads need where that is at most an
            // equal share of what the larger needs leave, and that share otherwise ([`fair_shares`]).
            let total = u128::from(u64::MAX) - 2;
            for d in 1..depth {
                // A call `p` calls from the entry reads the head of depth `d − 1 − p` at most.
                let read_depth = |p: &Option<u32>| p.and_then(|p| (d - 1).checked_sub(p as usize)).map(|r| r as u8);
                let fitters: Vec<Option<(Fitter, Vec<Option<u8>>)>> = (analyses.iter().enumerate())
                    .map(|(k, a)| {
                        let (Some((fcfg, plan)), Some(sites), Some((_, entry))) = (planned(a), &sites[k], bases[k])
                        else {
                            return None;
                        };
                        let depths: Vec<Option<u8>> = sites.positions.iter().map(read_depth).collect();
                        let throws = fcfg.cfg.throws() && !sites.sites.is_empty();
                        let bound = Bound { per_key: entry.max(1), throws, limit: total };
                        Some((Fitter { info, sites, levels: &levels, plan, bound }, depths))
                    })
                    .collect();
                let needs: Vec<u128> =
                    fitters.iter().map(|f| f.as_ref().map_or(0, |(f, depths)| f.need(depths))).collect();
                let shares = fair_shares(&needs, total);
                let mut keys = vec![1; analyses.len()];
                for (k, fitter) in fitters.into_iter().enumerate() {
                    let Some((mut fitter, depths)) = fitter else { continue };
                    fitter.bound.limit = shares[k];
                    let Fitted { read, depths, product, .. } = fitter.fit(&depths, &HashSet::new());
                    keys[k] = product + u64::from(fitter.bound.throws);
                    let sites = fitter.sites;
                    let mut reads = vec![None; sites.calls];
                    for (s, r) in sites.sites.iter().zip(&read) {
                        reads[s.0] = Some(r.0);
                    }
                    let calls = read.into_iter().map(|r| r.1).collect();
                    deeper[k].push((HeadLevel { offset: 0, keys: keys[k], calls, depths }, reads));
                }
                let level = Level::new(info, &referenced, &order, &bases, &keys, d as u8);
                for (k, d) in deeper.iter_mut().enumerate() {
                    if let (Some(last), Some((offset, _))) = (d.last_mut(), level.functions[k]) {
                        last.0.offset = offset;
                    }
                }
                levels.push(level);
            }
        }
        // A function that makes a tail call publishes its head before the call, and the function
        // it enters runs before the caller reads it: its calls, and those of every function it
        // calls in turn, must put back the word as around a function without probes.
        let tail_calls = analyses
            .iter()
            .flatten()
            .any(|(fcfg, _)| fcfg.sites.iter().any(|s| matches!(s.kind, SiteKind::TailCall(_))));
        let interposed = tail_calls
            || info.import_modules.iter().any(|m| may_call_back(m))
            || levels[0].functions.iter().any(Option::is_none);
        // The calls on the first paths of the activations interesting segments enter, which their
        // heads of depths past 0 number.
        let mut first = HashSet::new();
        if depth > 1 {
            let taken = interesting.values().flatten().flat_map(|p| p.heads.iter().flatten());
            taken.for_each(|t| entered(t, &mut first));
        }
        let mut entry_calls = HashMap::new();
        let mut by_block: HashMap<usize, CallsByBlock> = HashMap::new();
        for (function, path) in first {
            let Some(k) = function.checked_sub(info.num_imported_funcs).map(|k| k as usize) else { continue };
            let (Some(a), Some(Some(sites))) = (analyses.get(k), sites.get(k)) else { continue };
            let Some((_, plan)) = planned(a) else { continue };
            let Ok(q) = pathprof_core::regen::regenerate(&plan.dag, &plan.numbering, path) else { continue };
            let calls = by_block
                .entry(k)
                .or_insert_with(|| CallsByBlock::new(&sites.sites.iter().map(|s| s.1 as u32).collect::<Vec<_>>()));
            entry_calls.insert((function, path), calls.on(&q.blocks));
        }
        Heads { levels, deeper, sites, interposed, imported: info.num_imported_funcs, entry_calls }
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
        let ids = SupergraphPpp::interesting_ids(sg, plan, &s.by_block, self, paths?, max_slots as usize);
        if ids.is_empty() {
            return None;
        }
        SupergraphPpp::build(plan, sg, &s.by_block, ids, max_slots).ok().flatten()
    }

    /// The supergraph of defined function `k`, planned as `plan`, and the digit of each of its calls
    /// in operator order (`None`: it never runs; radix 1: it adds none): its counted IDs read the
    /// calls' heads of the deepest depth, with the calls that do not fit in 64 bits beside the
    /// paths ([`Fitter::fit`]) — preferably none where the `interesting` paths root segments — in
    /// the high keys (at most [`max_high_words`], [`Fitter::fill`]), and those that fit in none dropped or reading
    /// shallower heads ([`Fitter::shallower`]).
    pub fn supergraph(
        &self,
        info: &ModuleInfo,
        k: usize,
        fcfg: &FuncCfg,
        plan: &FunctionPlan,
        interesting: Option<&Vec<InterestingPath>>,
    ) -> FunctionSupergraph {
        let paths = plan.num_paths();
        let (entry_base, entry_paths) = entry_paths(&plan.dag, &plan.numbering);
        let head_offset = self.levels[0].functions[k].map_or(0, |(o, _)| o);
        let sites = self.sites[k].as_ref().expect("an instrumented function's calls are found with its head space");
        // The calls (by their place among the sites) where interesting segments are rooted.
        let blocks: Vec<u32> = sites.sites.iter().map(|s| s.1 as u32).collect();
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
        let deepest = self.levels.last().expect("a head space has depth 0").depth;
        let wanted = vec![Some(deepest); sites.sites.len()];
        let bound = Bound { per_key: paths, throws, limit: u128::from(u64::MAX) };
        let low = Fitter { info, sites, levels: &self.levels, plan, bound };
        let mut fitted = low.fit(&wanted, &taken);
        // The calls dropped from the key add their digits to the high keys, each taking as many
        // as fit in it of the calls the words before left, the last dropped first ([`Fitter::fill`]).
        let bound = Bound { per_key: 1, throws: false, limit: u128::from(u64::MAX) };
        let high = Fitter { info, sites, levels: &self.levels, plan, bound };
        let mut words: Vec<(Vec<Option<u8>>, Fitted)> = Vec::new();
        let mut left = fitted.dropped.clone();
        let max_words = usize::from(max_high_words(sites.sites.len()));
        while !left.is_empty() && words.len() < max_words {
            let mut to_high = vec![None; wanted.len()];
            for &c in &left {
                to_high[c] = wanted[c];
            }
            let in_word = high.fill(&left, &wanted);
            if in_word.dropped.len() == left.len() {
                break;
            }
            left = in_word.dropped.clone();
            words.push((to_high, in_word));
        }
        // Those that fit in none read a shallower head where one fits, last dropped first: in the
        // last high key, then in those before it, then in the key.
        let mut left: Vec<usize> = left.into_iter().rev().collect();
        for (to_high, in_word) in words.iter_mut().rev() {
            high.shallower(in_word, &left, to_high);
            left.retain(|&c| in_word.depths[c].is_none());
        }
        low.shallower(&mut fitted, &left, &wanted);
        for (w, (_, in_word)) in words.iter().enumerate() {
            for (c, depth) in in_word.depths.iter().enumerate() {
                if depth.is_some() {
                    fitted.read[c] = (in_word.read[c].0, CallDigit { word: w as u8 + 1, ..in_word.read[c].1 });
                    fitted.depths[c] = *depth;
                }
            }
        }
        let Fitted { read, depths, product, .. } = fitted;
        let keys = if throws { u128::from(product) + 1 } else { u128::from(product) };
        let ids = u64::try_from(u128::from(paths) * keys).unwrap_or(paths);
        let deeper = &self.deeper[k];
        let mut digits = vec![None; sites.calls];
        for (&(i, _, callee, _), &(r, c)) in sites.sites.iter().zip(&read) {
            let mut heads = [Read::NONE; MAX_DEPTH - 1];
            for (h, (_, reads)) in heads.iter_mut().zip(deeper) {
                *h = reads[i].unwrap_or(Read::NONE);
            }
            // A host function that never calls back runs no function that could use the word; any
            // other call, adding a digit or not, keeps whether it restores the word (see
            // `SupergraphSink`).
            let quiet =
                callee.is_some_and(|f| f < info.num_imported_funcs && !may_call_back(&info.import_modules[f as usize]));
            let restore = self.interposed && !quiet;
            let (radix, minus, rebase, word) = (r.radix, r.minus, r.rebase, r.word);
            digits[i] = Some(Digit { radix, minus, rebase, word, high: c.word, restore, weights: None, heads });
        }
        let at = sites.sites.iter().map(|s| s.0).collect();
        let unwound = (throws && !sites.sites.is_empty()).then_some(product);
        let calls = read.into_iter().map(|r| r.1).collect();
        let levels: Vec<HeadLevel> = deeper.iter().map(|(level, _)| level.clone()).collect();
        // At depth 1, every call reads its head of depth 0 or none, as `dropped` says.
        let depths = if levels.is_empty() { Vec::new() } else { depths };
        FunctionSupergraph {
            supergraph: Supergraph { paths, entry_base, entry_paths, ids, head_offset, calls, unwound, levels, depths },
            digits,
            sites: at,
            by_block,
        }
    }
}
