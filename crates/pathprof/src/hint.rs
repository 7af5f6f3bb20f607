//! From a profile to a faster program: branch hints (`metadata.code.branch_hint`) from a profile's
//! edge counts [PEP05 §6.5 drives an optimizer with its edge profile; PPP07 a scheduler with its
//! hot paths].
//!
//! Every `br_if` and `if` of the profiled module is a block with two CFG edges out of it, taken
//! when the condition is non-zero and when it is zero; a profile counts both (exactly from the
//! paths of `bl`, `kbl`, `ppp` and `events:pc`, as samples in `pep`). A branch that ran at least
//! [`HintOptions::min_count`] times and went one way at least [`HintOptions::min_bias`] of them is
//! hinted that way, with one exception. What Cranelift does with a hint is mark a block cold and lay
//! it out of line, and for a `br_if` hinted unlikely the block it marks is the branch's
//! destination: a loop header, or the code after a block's `end`, which other edges may also reach.
//! A `br_if` hinted unlikely would then move code out of line that runs hot from elsewhere (the
//! join of an `if`-`else` chain inside a loop, a loop's latch), so such a branch is hinted only when
//! its destination itself ran at most `1 - min_bias` of the branch's executions, counting every
//! edge into it; the others are left unhinted and counted ([`Hinted::hot_target`]). The other
//! cold blocks a hint can make — a `br_if`'s fall-through, an `if`'s then- or else-arm — have the
//! branch as their only predecessor. A branch whose two edges lead to one block is not hinted: its
//! edges cannot be told apart. Hints the module had are kept unless the profile contradicts them
//! (it ran the branch often enough and mostly the other way).

use crate::files::sha256_hex;
use crate::profiled::{core_module_of, ProfiledModule};
use anyhow::{bail, Context, Result};
use pathprof_core::profile::{Endpoint, FunctionProfile, Profile};
use pathprof_core::Succ;
use pathprof_wasm::component::{replace_core_module, CoreModulePath};
use pathprof_wasm::hints::{branch_sites, read_hints, write_hints, BranchOp, BranchSite, Hints};
use pathprof_wasm::ModuleInfo;
use std::collections::HashMap;

/// Which branches are hinted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HintOptions {
    /// Branches that ran fewer times are not hinted.
    pub min_count: u64,
    /// Branches that went their usual way a smaller share of the times are not hinted (from 0.5 to
    /// 1).
    pub min_bias: f64,
}

impl Default for HintOptions {
    fn default() -> Self {
        HintOptions { min_count: 100, min_bias: 0.9 }
    }
}

/// How often a branch went each way, in a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchCounts {
    pub taken: u64,
    pub not_taken: u64,
}

impl BranchCounts {
    pub fn total(self) -> u64 {
        self.taken.saturating_add(self.not_taken)
    }

    /// The share of the times it was taken (0 when it never ran).
    pub fn taken_share(self) -> f64 {
        match self.total() {
            0 => 0.0,
            n => self.taken as f64 / n as f64,
        }
    }
}

/// What hinting made of a module.
#[derive(Debug)]
pub struct Hinted {
    /// The program (module or component) with its hints.
    pub bytes: Vec<u8>,
    /// The module's two-way branches, those the profile saw run, those hinted from the profile,
    /// and the hints it had that were kept or dropped as contradicted.
    pub branches: usize,
    pub ran: usize,
    pub hinted: usize,
    pub kept: usize,
    pub dropped: usize,
    /// The `br_if`s biased enough to be hinted unlikely but left unhinted: their destination, which
    /// Cranelift would lay out of line, ran too often from other edges.
    pub hot_target: usize,
    /// How often the blocks the written hints mark cold ran, in the profile (of the branches it
    /// counted), and how often the destinations of the `hot_target` branches ran: what hinting
    /// them would have laid out of line.
    pub cold: u64,
    pub spared: u64,
    /// The hints written, by function and offset.
    pub hints: Hints,
}

/// The counts of `f`'s edges, by source block and target.
fn edge_counts(f: &FunctionProfile) -> HashMap<(u32, Endpoint), u64> {
    f.edges().iter().map(|e| ((e.from, e.to), e.count.0)).collect()
}

fn endpoint(s: Succ) -> Option<Endpoint> {
    match s {
        Succ::Block(b) => Some(Endpoint::Block(b)),
        Succ::Exit => Some(Endpoint::Exit),
        Succ::Throw => None,
    }
}

/// How often `site` went each way in the profile of its function (`counts`, from [`edge_counts`]);
/// `None` when its two edges lead to one place and cannot be told apart.
fn site_counts(site: &BranchSite, counts: &HashMap<(u32, Endpoint), u64>) -> Option<BranchCounts> {
    let (taken, not_taken) = (endpoint(site.taken)?, endpoint(site.not_taken)?);
    if taken == not_taken {
        return None;
    }
    let count = |to| counts.get(&(site.block, to)).copied().unwrap_or(0);
    Some(BranchCounts { taken: count(taken), not_taken: count(not_taken) })
}

/// How often each place of `f` was entered, over every edge into it (from [`edge_counts`]).
fn entries(counts: &HashMap<(u32, Endpoint), u64>) -> HashMap<Endpoint, u64> {
    let mut entries = HashMap::new();
    for (&(_, to), &n) in counts {
        let e: &mut u64 = entries.entry(to).or_default();
        *e = e.saturating_add(n);
    }
    entries
}

/// The module `profile` profiles in `program` (refused unless it is a profile of `program`), the
/// number of its branches that hints may name (`br_if`, `if`), and the two-way branches of the
/// functions the profile has, typed-reference branches too, with how often it saw each go each way.
fn counted_branches<'a, 'p>(
    program: &'a [u8],
    profile: &'p Profile,
) -> Result<(ProfiledModule<'a>, usize, Vec<Branch<'p>>)> {
    if profile.module.sha256 != sha256_hex(program) {
        bail!("the profile is a profile of another module ({})", profile.module.path);
    }
    let profiled = ProfiledModule::of(program, core_module_of(&profile.module).as_ref())?;
    let first_defined = ModuleInfo::read(profiled.bytes)?.num_imported_funcs;
    let sites = branch_sites(profiled.bytes).context("cannot read the module's branches")?;
    let mut counted = Vec::new();
    for f in &profile.functions {
        let Some(sites) = f.index.checked_sub(first_defined).and_then(|k| sites.get(k as usize)) else { continue };
        let counts = edge_counts(f);
        let entries = entries(&counts);
        for site in sites {
            if let Some(c) = site_counts(site, &counts) {
                let destination = endpoint(site.taken).and_then(|to| entries.get(&to)).copied().unwrap_or(0);
                counted.push(Branch { function: f, site: site.clone(), counts: c, destination });
            }
        }
    }
    let hintable = sites.iter().flatten().filter(|s| s.op.hintable()).count();
    Ok((profiled, hintable, counted))
}

/// `program` with its profiled module (`profiled`) written with `hints` in place of its own.
fn rewritten(program: &[u8], profiled: &ProfiledModule, hints: &Hints) -> Result<Vec<u8>> {
    let module = write_hints(profiled.bytes, hints)?;
    Ok(match &profiled.component {
        None => module,
        Some((info, m)) => replace_core_module(program, info, m, &module)?,
    })
}

/// The program `program` with branch hints from `profile`, a profile of it.
pub fn hint(program: &[u8], profile: &Profile, options: &HintOptions) -> Result<Hinted> {
    if !(0.5..=1.0).contains(&options.min_bias) {
        bail!("the least bias hinted must be from 0.5 to 1");
    }
    if !profile.mode.lists_paths() {
        bail!("a {} profile has no paths, and so no edge counts, to hint branches from", profile.mode);
    }
    let (profiled, branches, mut counted) = counted_branches(program, profile)?;
    counted.retain(|b| b.site.op.hintable());
    let mut hints = read_hints(profiled.bytes).context("cannot read the module's branch hints")?;
    let (mut ran, mut hinted, mut dropped, mut hot_target, mut spared) = (0, 0, 0, 0, 0u64);
    for b @ Branch { function, site, counts: c, .. } in &counted {
        ran += usize::from(c.total() > 0);
        if c.total() < options.min_count {
            continue;
        }
        let share = c.taken_share();
        let mine = hints.entry(function.index).or_default();
        let hint = if share >= options.min_bias {
            Some(true)
        } else if 1.0 - share >= options.min_bias {
            if b.cold_destination(options.min_bias) {
                Some(false)
            } else {
                hot_target += 1;
                spared = spared.saturating_add(b.destination);
                None
            }
        } else {
            None
        };
        match (hint, mine.get(&site.offset).copied()) {
            (Some(h), old) => {
                dropped += usize::from(old.is_some_and(|o| o != h));
                hinted += 1;
                mine.insert(site.offset, h);
            }
            // An old hint the profile contradicts.
            (None, Some(old)) if old != (share > 0.5) => {
                dropped += 1;
                mine.remove(&site.offset);
            }
            (None, _) => {}
        }
    }
    hints.retain(|_, h| !h.is_empty());
    let written: usize = hints.values().map(|h| h.len()).sum();
    let kept = written - hinted;
    let cold = counted
        .iter()
        .filter_map(|b| Some(b.marked_cold(*hints.get(&b.function.index)?.get(&b.site.offset)?)))
        .fold(0u64, u64::saturating_add);
    let bytes = rewritten(program, &profiled, &hints)?;
    Ok(Hinted { bytes, branches, ran, hinted, kept, dropped, hot_target, cold, spared, hints })
}

/// A two-way branch of the profiled module, and how often the profile saw it go each way.
#[derive(Clone, Debug)]
pub struct Branch<'a> {
    pub function: &'a FunctionProfile,
    pub site: BranchSite,
    pub counts: BranchCounts,
    /// How often the place the branch leads to when taken ran, over every edge into it.
    pub destination: u64,
}

impl Branch<'_> {
    /// Whether a hint that the branch is unlikely taken would mark only rarely run code cold. A
    /// `br_if`'s destination is the block Cranelift marks cold, and other edges may reach it: it
    /// must have run at most `1 - min_bias` of the branch's executions. An `if`'s then-arm has the
    /// `if` as its only predecessor.
    pub fn cold_destination(&self, min_bias: f64) -> bool {
        self.site.op != BranchOp::BrIf || self.destination as f64 <= (1.0 - min_bias) * self.counts.total() as f64
    }

    /// How often the block that a hint `likely` on the branch marks cold ran: a `br_if`'s
    /// fall-through or an `if`'s else-arm when likely taken, a `br_if`'s destination or an `if`'s
    /// then-arm when not.
    pub fn marked_cold(&self, likely: bool) -> u64 {
        match (likely, self.site.op) {
            (true, _) => self.counts.not_taken,
            (false, BranchOp::BrIf) => self.destination,
            (false, _) => self.counts.taken,
        }
    }

    /// The share of the times it went its usual way (from 0.5 to 1).
    pub fn bias(&self) -> f64 {
        let share = self.counts.taken_share();
        share.max(1.0 - share)
    }
}

/// The two-way branches of `program` that ran at least `min_count` times in `profile` (a profile
/// of it), in `function` when given: the most biased first — at least `min_bias` one way, what a
/// developer would mark likely or cold — and the most evenly split, by how close they come to half
/// and half; each list by executions among equals, at most `top` long.
pub fn branches<'a>(
    program: &[u8],
    profile: &'a Profile,
    function: Option<&str>,
    (min_count, min_bias): (u64, f64),
    top: usize,
) -> Result<(Vec<Branch<'a>>, Vec<Branch<'a>>)> {
    let selected = |b: &Branch| function.is_none_or(|sel| crate::view::matches(b.function, sel));
    let (_, _, mut all) = counted_branches(program, profile)?;
    all.retain(|b| selected(b) && b.counts.total() >= min_count.max(1));
    let key = |b: &Branch| (std::cmp::Reverse(b.counts.total()), b.function.index, b.site.offset);
    let mut biased: Vec<Branch> = all.iter().filter(|b| b.bias() >= min_bias).cloned().collect();
    biased.sort_by_key(key);
    biased.truncate(top);
    let mut even = all;
    even.sort_by(|a, b| a.bias().total_cmp(&b.bias()).then_with(|| key(a).cmp(&key(b))));
    even.truncate(top);
    Ok((biased, even))
}

/// `hints` the other way round: every branch hinted likely is hinted unlikely (a control: it must
/// not make the program faster).
pub fn inverted(hints: &Hints) -> Hints {
    hints.iter().map(|(&f, h)| (f, h.iter().map(|(&o, &t)| (o, !t)).collect())).collect()
}

/// `program`'s profiled module written with `hints` in place of its own (in its component when it
/// is one).
pub fn with_hints(program: &[u8], core_module: Option<&CoreModulePath>, hints: &Hints) -> Result<Vec<u8>> {
    rewritten(program, &ProfiledModule::of(program, core_module)?, hints)
}
