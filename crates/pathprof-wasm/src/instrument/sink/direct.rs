//! The direct sink of event counting (`dec`), the baseline of [EVT23 §3.2]: no paths at all — the
//! function has no path register increments — and every stretch of straight-line code adds its
//! event vector to the function's event counters where it starts (see
//! [`BodyEvents`](crate::events::BodyEvents)).

use super::path_sink::{PathEnd, PathSink};
use crate::events::columns;
use crate::instrument::emit::Emitter;
use wasm_encoder::Instruction;

/// A function that counts its events directly: one counter per event that occurs in it (the events
/// of `mask`), at byte `counters` of the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirectSink {
    pub counters: u32,
    pub mask: u64,
}

impl PathSink for DirectSink {
    fn record(&self, _: &mut Emitter, _: PathEnd) {}

    /// Adds `vector` (an entry per event of the module) to the function's event counters.
    fn stretch(&self, e: &mut Emitter, vector: &[u64]) {
        for (rank, v) in columns(vector, self.mask).enumerate() {
            if v > 0 {
                e.add_to_word64(u64::from(self.counters) + 8 * rank as u64, &[Instruction::I64Const(v as i64)]);
            }
        }
    }
}
