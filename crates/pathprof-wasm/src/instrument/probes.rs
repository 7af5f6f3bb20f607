//! The probes of one function, ready to emit: its CFG, its path registers, its sink, its loop and
//! run counters, the copies without probes it also runs as, and the events its stretches add.

use super::copies::LoopCopy;
use super::layout::Layout;
use super::loops::LoopPlan;
use super::registers::Registers;
use super::sink::{Digit, Sink};
use super::switch::{Resumed, Switches};
use crate::cfg::FuncCfg;
use crate::events::BodyEvents;
use pathprof_core::ppp::PppPlan;
use pathprof_core::FunctionPlan;
use wasm_encoder::BlockType;

/// The probes of one function.
pub(crate) struct FuncProbe {
    pub fcfg: FuncCfg,
    pub registers: Registers,
    pub sink: Sink,
    /// Loop and run counters, and how the headers count.
    pub counting: LoopPlan,
    pub wrapper: BlockType,
    /// The loops that also run as a copy without probes (in the plain copy, with `switches`).
    pub copies: Vec<LoopCopy>,
    /// With whole-function copies: where the plain and the instrumented copy switch.
    pub switches: Option<Switches>,
    /// With whole-function copies, when the function's locals can be passed: the function that it
    /// switches to, which takes its locals and the switch point as parameters (see
    /// [`switch`](super::switch)).
    pub resumed: Option<Resumed>,
    /// With a sink that counts events where they occur: the events of the stretches of
    /// straight-line code, added where they start (at the entry, and after operator `i`).
    pub entry_events: Vec<u64>,
    pub stretch_events: Vec<(usize, Vec<u64>)>,
    /// Mode `ippp`: the digit each call adds to the supergraph path, in operator order (`None`:
    /// none).
    pub digits: Vec<Option<Digit>>,
}

impl FuncProbe {
    /// The probes of a function planned as `plan` (with `ppp` and `loops` as planned), recorded by
    /// `sink`, its body wrapped in a block of type `wrapper`; tables and counters are taken from
    /// `layout`.
    pub fn new(
        fcfg: FuncCfg,
        plan: &FunctionPlan,
        ppp: Option<&PppPlan>,
        sink: Sink,
        wrapper: BlockType,
        loops: Option<LoopPlan>,
        layout: &mut Layout,
    ) -> Self {
        // The preferential register's increments, for a function whose sink reads that register.
        let ppp_inc = ppp.filter(|_| sink.reads_preferential_register()).map(|p| p.inc.as_slice());
        let registers = Registers::new(&fcfg, plan, ppp_inc, sink.counts_paths(), sink.wide_register(), layout);
        let counting = match (sink.array(), loops) {
            (Some(array), Some(loops)) => loops.place(layout, array.offset),
            _ => LoopPlan::none(fcfg.blocks.len(), fcfg.cfg.edges().len()),
        };
        FuncProbe {
            fcfg,
            registers,
            sink,
            counting,
            wrapper,
            copies: Vec::new(),
            switches: None,
            resumed: None,
            entry_events: Vec::new(),
            stretch_events: Vec::new(),
            digits: Vec::new(),
        }
    }

    /// The stretches of `events` counted where they start, when the function's sink counts events
    /// there.
    pub fn count_stretches(&mut self, events: BodyEvents) {
        if self.sink.counts_stretches() {
            self.entry_events = events.entry;
            self.stretch_events = events.stretches;
        }
    }
}
