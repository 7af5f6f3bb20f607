//! How the path registers run through one body [BL96, PEP05 §3.2]: their width, the increment of
//! every CFG edge (only chords of the spanning tree carry one) and of every path start, the blocks
//! where paths end and start, and the `br_table` tables of increments.

use super::emit::{Inc, TableOffsets};
use super::layout::Layout;
use crate::cfg::{FuncCfg, SiteKind};
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::FunctionPlan;
use std::collections::HashMap;

/// The path registers of one function.
pub(crate) struct Registers {
    /// Width of the Ball–Larus register: 32 bits when the function's path IDs fit.
    pub bits: u32,
    /// Increment of every CFG edge (0 for tree edges and edges out of unreachable blocks).
    pub edge: Vec<Inc>,
    /// The registers at the start of a path from a cut block or header.
    pub start: Vec<Inc>,
    /// The registers at the function's entry.
    pub entry: Inc,
    /// The blocks whose start ends a path and starts another (loop headers, cut blocks).
    pub cut: Vec<bool>,
    /// Byte offsets of the increment tables of each `br_table` site, by operator index.
    pub tables: HashMap<usize, TableOffsets>,
}

/// The width of a function's path register: 32 bits when its IDs fit.
pub(crate) fn register_bits(plan: &FunctionPlan) -> u32 {
    if plan.num_paths() <= 1 << 32 {
        32
    } else {
        64
    }
}

impl Registers {
    /// The registers of a function planned as `plan`: with `ppp`, the increments of a second,
    /// preferential register on the same edges; with `counts_paths` false, none at all (a function
    /// that counts no paths); with `wide`, a 64-bit register whatever the paths. The tables of
    /// `br_table` sites are taken from `layout`.
    pub fn new(
        fcfg: &FuncCfg,
        plan: &FunctionPlan,
        ppp: Option<&[u64]>,
        counts_paths: bool,
        wide: bool,
        layout: &mut Layout,
    ) -> Registers {
        let nb = fcfg.blocks.len();
        let bits = if wide { 64 } else { register_bits(plan) };
        let mut edge = vec![Inc::default(); fcfg.cfg.edges().len()];
        let mut start = vec![Inc::default(); nb];
        let mut entry = Inc::default();
        for (e, dag_edge) in plan.dag.edges.iter().enumerate().filter(|_| counts_paths) {
            let inc = Inc { bl: plan.placement.inc[e], ppp: ppp.map_or(0, |p| p[e]) };
            match dag_edge.kind {
                DagEdgeKind::Real(u32::MAX) => entry = inc,
                DagEdgeKind::Real(c) | DagEdgeKind::End(c, _) | DagEdgeKind::Throw(c) => edge[c as usize] = inc,
                DagEdgeKind::Start(b) => start[b as usize] = inc,
            }
        }
        let mut tables = HashMap::new();
        for site in &fcfg.sites {
            if let SiteKind::Table(entries) = &site.kind {
                if entries.iter().all(|&e| edge[e as usize] == Inc::default()) {
                    continue;
                }
                // Tables are placed after all counters; offsets are relative until `finish`.
                let bl = layout.table(bits, entries.iter().map(|&e| edge[e as usize].bl));
                let ppp = ppp.map(|_| layout.table(32, entries.iter().map(|&e| edge[e as usize].ppp)));
                tables.insert(site.op, TableOffsets { bl, ppp });
            }
        }
        let cut = if counts_paths { plan.dag.cut.clone() } else { vec![false; nb] };
        Registers { bits, edge, start, entry, cut, tables }
    }
}
