//! The preferential sink [PPP07 §3.3]: the function keeps two registers, the Ball–Larus one and
//! the preferential one, incremented on the same chords. At a path end, a preferential ID within
//! the function's slots indexes the slot of an interesting path, which holds that path's Ball–Larus
//! ID: when the IDs agree, the slot's count goes up; otherwise — an ID out of range, a hole, or an
//! uninteresting path that aliases an interesting one — the path is residual, and the host counts
//! it exactly by its Ball–Larus ID ([`HostImport::CountPath`](crate::abi::HostImport)). In the field,
//! residual paths are the untested ones [PPP07 §3.5].

use super::path_sink::{PathEnd, PathSink};
use crate::abi::{PPP_HOLE, PPP_SLOT_BYTES, PPP_SLOT_COUNT};
use crate::instrument::emit::{increment_word64_at, Emitter};
use crate::instrument::layout::Layout;
use wasm_encoder::{BlockType, Instruction, MemArg, ValType};

/// A preferentially counted function: `slots` slots at byte `offset` of the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PppSink {
    pub offset: u32,
    pub slots: u32,
}

impl PathSink for PppSink {
    /// The preferential register.
    fn locals(&self) -> &'static [ValType] {
        &[ValType::I32]
    }

    fn record(&self, e: &mut Emitter, _: PathEnd) {
        self.record_or(e, |e| e.call_with_path());
    }
}

impl PppSink {
    /// Slots for the paths `slots` holds (their IDs, `None` for a hole), after the slots so far in
    /// `layout`; `None` when they do not fit. Slots go after every array (see `Layout::slots`): at an
    /// offset from their base until then.
    pub(crate) fn place(layout: &mut Layout, slots: &[Option<u64>]) -> Option<PppSink> {
        let bytes = layout.slots.len() as u64 + u64::from(PPP_SLOT_BYTES) * slots.len() as u64;
        if !layout.fits(bytes) {
            return None;
        }
        let offset = layout.slots.len() as u32;
        for slot in slots {
            layout.slots.extend_from_slice(&slot.unwrap_or(PPP_HOLE).to_le_bytes());
            layout.slots.extend_from_slice(&0u64.to_le_bytes());
        }
        Some(PppSink { offset, slots: slots.len() as u32 })
    }

    /// Counts the path in its slot when the preferential register indexes the slot of the path in
    /// the path register (a 64-bit view of it); otherwise emits `residual`.
    pub(crate) fn record_or(&self, e: &mut Emitter, residual: impl FnOnce(&mut Emitter)) {
        let q = e.q.expect("a preferential function has a preferential register");
        let slot = |offset: u32| MemArg { offset: u64::from(offset), align: 3, memory_index: e.memory };
        let (id, count) = (slot(self.offset), slot(self.offset + PPP_SLOT_COUNT));
        let f = &mut *e.f;
        f.instruction(&Instruction::Block(BlockType::Empty));
        f.instruction(&Instruction::Block(BlockType::Empty));
        // Out of range (the unsigned comparison also catches negative IDs): residual.
        f.instruction(&Instruction::LocalGet(q));
        f.instruction(&Instruction::I32Const(self.slots as i32));
        f.instruction(&Instruction::I32GeU);
        f.instruction(&Instruction::BrIf(0));
        // Another path's slot, or a hole: residual.
        f.instruction(&Instruction::LocalGet(q));
        f.instruction(&Instruction::I32Const(PPP_SLOT_BYTES.trailing_zeros() as i32));
        f.instruction(&Instruction::I32Shl);
        f.instruction(&Instruction::LocalTee(e.a));
        f.instruction(&Instruction::I64Load(id));
        e.r_as_i64();
        let f = &mut *e.f;
        f.instruction(&Instruction::I64Ne);
        f.instruction(&Instruction::BrIf(0));
        increment_word64_at(f, e.a, count);
        f.instruction(&Instruction::Br(1));
        f.instruction(&Instruction::End);
        residual(e);
        e.f.instruction(&Instruction::End);
    }
}
