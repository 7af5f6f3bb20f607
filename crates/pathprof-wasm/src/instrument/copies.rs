//! Loops that also run as a copy without probes (Arnold–Ryder duplication [AR01], for single
//! loops): a sink that only records path ends while a flag is set — sampling — runs the loop's
//! original bytes while it is clear. The sampling sink emits the choice and the copy's exit
//! ([`sink::sample`](super::sink)); this module finds the loops that can have one.

use super::layout::Layout;
use super::registers::Registers;
use crate::cfg::{FuncCfg, SiteKind, OPCODE_BR_IF, OPCODE_END, OPCODE_LOOP};
use pathprof_core::Succ;

/// A loop whose iterations can also run in a copy without probes.
pub(crate) struct LoopCopy {
    /// The `loop` operator and its `end`.
    pub start: usize,
    pub end: usize,
    /// `r` when the loop's back edge ends its path, and when the loop is left.
    pub path: u64,
    pub exit: u64,
    /// Byte offset of the `u64` count of the ticks missed while the copy ran.
    pub slot: u32,
}

/// The loops that get a copy without probes, each with a slot of bursts taken from
/// `layout`: the loops of one block (a header whose only branch is the `br_if` back to it right
/// before the loop's `end`) that call nothing and nest nothing; their copies are their bytes.
pub(crate) fn loop_copies(fcfg: &FuncCfg, registers: &Registers, bytes: &[u8], layout: &mut Layout) -> Vec<LoopCopy> {
    let opcode = |i: usize| bytes[fcfg.op_offsets[i] as usize];
    // Operators that branch, call, nest, trap for good or throw (and the prefix of the GC operators,
    // whose `br_on_cast` branches): none may sit inside such a loop.
    let control = |op: u8| matches!(op, 0x00 | 0x02..=0x15 | 0x18 | 0x19 | 0x1f | 0xd5 | 0xd6 | 0xfb);
    let mut loops = Vec::new();
    for (k, &(start, h)) in fcfg.block_starts.iter().enumerate() {
        if opcode(start) != OPCODE_LOOP || !registers.cut.get(h as usize).copied().unwrap_or(false) {
            continue;
        }
        // The next block starts after the back edge.
        let Some(&(back, _)) = fcfg.block_starts.get(k + 1) else { continue };
        let end = back + 1;
        if end >= fcfg.num_ops || opcode(back) != OPCODE_BR_IF || opcode(end) != OPCODE_END {
            continue;
        }
        if (start + 1..back).any(|i| control(opcode(i))) {
            continue;
        }
        let first_special = fcfg.specials.partition_point(|&(op, _)| op <= start);
        if fcfg.specials.get(first_special).is_some_and(|&(op, _)| op < end) {
            continue;
        }
        let Ok(site) = fcfg.sites.binary_search_by_key(&back, |s| s.op) else { continue };
        let SiteKind::Cond(taken, not_taken) = fcfg.sites[site].kind else { continue };
        if fcfg.cfg.edges()[taken as usize].to != Succ::Block(h) {
            continue;
        }
        let r = registers.start[h as usize].bl;
        let path = r.wrapping_add(registers.edge[taken as usize].bl);
        let exit = r.wrapping_add(registers.edge[not_taken as usize].bl);
        let width = |v: u64| if registers.bits == 32 { v as u32 as u64 } else { v };
        let slot = layout.take(8);
        loops.push(LoopCopy { start, end, path: width(path), exit: width(exit), slot });
    }
    loops
}
