//! The sampling sink of PEP [PEP05 §3.2–3.3]: the register is computed as for counting, but a path
//! end only tests the host's flag, the first word of the profiler's memory ([`SAMPLE_FLAG`]). Path
//! ends sit at loop headers and function exits, where the JVM has its yieldpoints, so the flag test
//! is PEP's yieldpoint test. While the flag is set, a path end lets `skip` path ends go by and then
//! writes its sample to a buffer ([`SampleBufferLayout`]), or, without a buffer, calls the host
//! ([`HostImport::SamplePath`](crate::abi::HostImport)), which keeps every N-th.
//!
//! # Sampling in loops
//!
//! With a sample buffer, a path end only matters while the host's flag is set. A loop of one block
//! — its header's only branch is the `br_if` back to it, right before the loop's `end` — that calls
//! nothing and nests nothing runs in one of two copies, chosen where it is entered: the instrumented
//! loop while the flag is set, and otherwise its original bytes, which only count their iterations
//! in a local (the path register is set once the copy is left). With whole-function copies
//! ([`switch`](crate::instrument::switch)), such a loop runs as its original bytes in the plain
//! copies, without a test of the flag. Such loops are the hottest code of
//! many programs (sieve's inner loop, matrix's dot product), and the copy spares each iteration the
//! flag's load and test. The loops are found by [`copies`](crate::instrument::copies).
//!
//! The flag may be set while the copy runs. Each iteration but the last ended the loop's path (a
//! constant ID), and each iteration is as likely as the next to be the one during which the flag
//! was set, so the copy's exit, finding the flag set, calls a function that the instrumenter appends
//! to the module ([`loop_copy_exit`]), which gives the sampler `random * n >> 32` of those path ends
//! (`n` iterations, `random` a word that the host sets afresh with the flag): it lets go by as many
//! as it still has to skip, then takes its samples from the rest, as the instrumented loop would
//! have. The samples of a tick thus start at the same point of the loop's run as they would have, in
//! distribution (iterations of one loop run take about the same time), and no path end is sampled
//! that did not happen. A copy may also run for many ticks (random's loop is the whole program):
//! the host cannot arm the flag again while it is set, and counts each such tick as missed (from 0
//! each time it sets the flag, which was clear when the copy began); the copy's exit adds the ticks
//! missed while it ran to a slot of its own, and the host adds a burst of samples of the loop's path
//! for each ([`Probes::loop_bursts`](crate::map::Probes::loop_bursts)).

use super::path_sink::{PathEnd, PathSink};
use crate::abi::{SampleBufferLayout, SAMPLE_FLAG};
use crate::cfg::OPCODE_IF;
use crate::instrument::copies::LoopCopy;
use crate::instrument::emit::{add_to_word, word, Emitter, Inc};
use wasm_encoder::{BlockType, Function, Instruction, MemArg, ValType};

/// A sampled function: its samples go to `buffer`, or to the host without one. A `wide` function's
/// path IDs exceed 32 bits, more than a buffer's `function << 32 | path ID` carries: its samples
/// (taken as the buffer's would be) go to the host with the whole ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SampleSink {
    pub buffer: Option<SampleBufferLayout>,
    pub wide: bool,
}

impl PathSink for SampleSink {
    fn record(&self, e: &mut Emitter, _: PathEnd) {
        match self.buffer {
            Some(layout) => e.sample_to_buffer(layout, self.wide),
            None => {
                e.f.instruction(&Instruction::I32Const(0));
                e.f.instruction(&Instruction::I32Load(e.flag_word()));
                e.f.instruction(&Instruction::If(BlockType::Empty));
                e.call_with_path();
                e.f.instruction(&Instruction::End);
            }
        }
    }
}

/// Sampled mode with a sample buffer: `buffer[index] = item` (an `i64` the instructions push), then
/// `index += 1` and, last, `flag -= 1`, the order the host relies on (see [`SampleBufferLayout`]).
fn append_sample(f: &mut Function, layout: SampleBufferLayout, memory: u32, item: &[Instruction]) {
    let word = |offset| word(memory, offset);
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(word(layout.index)));
    f.instruction(&Instruction::I32Const(3));
    f.instruction(&Instruction::I32Shl);
    for i in item {
        f.instruction(i);
    }
    f.instruction(&Instruction::I64Store(MemArg { offset: u64::from(layout.buffer), align: 3, memory_index: memory }));
    add_to_word(f, word(layout.index), 1, false);
    add_to_word(f, word(SAMPLE_FLAG), -1, layout.atomic);
}

/// The parameters of [`loop_copy_exit`]: the copy's iterations, its path's sample (`function << 32 |
/// path ID`) and the byte offset of its slot of bursts.
pub(crate) const LOOP_COPY_EXIT_PARAMS: [ValType; 3] = [ValType::I32, ValType::I64, ValType::I32];

/// The function that a loop's copy without probes calls at its exit when the flag was set while it
/// ran (see the module docs), appended to the module, in memory `memory`.
///
/// The copy ran `n` iterations, all but the last of which ended the loop's path. The flag was set
/// during one of them, each as likely as the next, which leaves `random * n >> 32` (`0` to `n - 1`)
/// of those path ends to the sampler: first those it lets go by, then its samples, stored as
/// `sample_to_buffer` stores them. The ticks that the host missed since it set the flag, all while the
/// copy ran (the flag was clear when the copy began), are added to the loop's slot of bursts.
pub(crate) fn loop_copy_exit(layout: SampleBufferLayout, memory: u32) -> Function {
    let word = |offset| word(memory, offset);
    let (flag, skip) = (word(SAMPLE_FLAG), word(layout.skip));
    let (random, missed) = (word(layout.random), word(layout.missed));
    let (n, item, slot, left, cut) = (0, 1, 2, 3, 4);
    let mut f = Function::new([(2, ValType::I32)]);
    if layout.atomic {
        f.instruction(&Instruction::AtomicFence);
    }
    // left = random * n >> 32
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(random));
    f.instruction(&Instruction::I64ExtendI32U);
    f.instruction(&Instruction::LocalGet(n));
    f.instruction(&Instruction::I64ExtendI32U);
    f.instruction(&Instruction::I64Mul);
    f.instruction(&Instruction::I64Const(32));
    f.instruction(&Instruction::I64ShrU);
    f.instruction(&Instruction::I32WrapI64);
    f.instruction(&Instruction::LocalSet(left));
    // cut = min(skip, left); skip -= cut; left -= cut
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(skip));
    f.instruction(&Instruction::LocalTee(cut));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::LocalGet(cut));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::I32LtU);
    f.instruction(&Instruction::Select);
    f.instruction(&Instruction::LocalSet(cut));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(skip));
    f.instruction(&Instruction::LocalGet(cut));
    f.instruction(&Instruction::I32Sub);
    f.instruction(&Instruction::I32Store(skip));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::LocalGet(cut));
    f.instruction(&Instruction::I32Sub);
    f.instruction(&Instruction::LocalSet(left));
    // While left and the flag are not 0: a sample.
    f.instruction(&Instruction::Block(BlockType::Empty));
    f.instruction(&Instruction::Loop(BlockType::Empty));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::I32Eqz);
    f.instruction(&Instruction::BrIf(1));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(flag));
    f.instruction(&Instruction::I32Eqz);
    f.instruction(&Instruction::BrIf(1));
    append_sample(&mut f, layout, memory, &[Instruction::LocalGet(item)]);
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::I32Const(-1));
    f.instruction(&Instruction::I32Add);
    f.instruction(&Instruction::LocalSet(left));
    f.instruction(&Instruction::Br(0));
    f.instruction(&Instruction::End);
    f.instruction(&Instruction::End);
    // Every later tick while the copy ran found the flag set: a burst of samples of the loop's path
    // that the host adds.
    let bursts = MemArg { offset: 0, align: 3, memory_index: memory };
    f.instruction(&Instruction::LocalGet(slot));
    f.instruction(&Instruction::LocalGet(slot));
    f.instruction(&Instruction::I64Load(bursts));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32AtomicLoad(missed));
    f.instruction(&Instruction::I64ExtendI32U);
    f.instruction(&Instruction::I64Add);
    f.instruction(&Instruction::I64Store(bursts));
    f.instruction(&Instruction::End);
    f
}

impl Emitter<'_> {
    /// While the flag is set, lets `skip` path ends go by, then appends `function << 32 | r` to the
    /// buffer (`wide`: passes the function and `r` to the host) and decrements the flag, last, so
    /// that the host sees the sample once it sees the flag change.
    fn sample_to_buffer(&mut self, layout: SampleBufferLayout, wide: bool) {
        let (flag, skip) = (word(self.memory, SAMPLE_FLAG), word(self.memory, layout.skip));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(flag));
        self.f.instruction(&Instruction::If(BlockType::Empty));
        if layout.atomic {
            // Orders the flag's load before those of the words the host wrote before setting it.
            self.f.instruction(&Instruction::AtomicFence);
        }
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(skip));
        self.f.instruction(&Instruction::If(BlockType::Empty));
        add_to_word(self.f, skip, -1, false);
        self.f.instruction(&Instruction::Else);
        if wide {
            self.call_with_path();
            add_to_word(self.f, flag, -1, layout.atomic);
        } else {
            // function << 32 | r
            let mut item =
                vec![Instruction::I64Const((u64::from(self.func_index) << 32) as i64), Instruction::LocalGet(self.r)];
            if self.bits == 32 {
                item.push(Instruction::I64ExtendI32U);
            }
            item.push(Instruction::I64Or);
            append_sample(self.f, layout, self.memory, &item);
        }
        self.f.instruction(&Instruction::End);
        self.f.instruction(&Instruction::End);
    }

    /// Before a loop with a copy without probes: while the flag is 0, the copy runs instead (see the
    /// module docs). `block_type` is the loop's, as encoded.
    pub fn choose_loop_copy(&mut self, block_type: &[u8]) {
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(self.flag_word()));
        self.f.raw(std::iter::once(OPCODE_IF).chain(block_type.iter().copied()));
    }

    /// The copy without probes of a loop (`loop_op`, then `body` up to its `end`), counting its
    /// iterations in `n`; then `r` as the instrumented loop leaves it and, when the flag was set
    /// while the copy ran, a call of the module's [`loop_copy_exit`] function.
    pub fn loop_copy(&mut self, loop_op: &[u8], body: &[u8], l: &LoopCopy, exit_func: u32) {
        let n = self.copy_iterations;
        let f = &mut *self.f;
        f.instruction(&Instruction::Else);
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::LocalSet(n));
        f.raw(loop_op.iter().copied());
        f.instruction(&Instruction::LocalGet(n));
        f.instruction(&Instruction::I32Const(1));
        f.instruction(&Instruction::I32Add);
        f.instruction(&Instruction::LocalSet(n));
        f.raw(body.iter().copied());
        self.set(Inc { bl: l.exit, ppp: 0 });
        self.loop_copy_exit_check(l, exit_func);
        // The end of the choice between the loop and its copy.
        self.f.instruction(&Instruction::End);
    }

    /// After a loop's copy without probes, whose iterations `n` counted: when the flag was set
    /// while it ran, a call of the module's [`loop_copy_exit`] function.
    pub fn loop_copy_exit_check(&mut self, l: &LoopCopy, exit_func: u32) {
        let (n, flag) = (self.copy_iterations, self.flag_word());
        let f = &mut *self.f;
        // An atomic load: the compiler would otherwise reuse the value of the load before the loop,
        // as no store of the module's comes between them, and miss the host's.
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I32AtomicLoad(flag));
        f.instruction(&Instruction::If(BlockType::Empty));
        f.instruction(&Instruction::LocalGet(n));
        f.instruction(&Instruction::I64Const((u64::from(self.func_index) << 32 | l.path) as i64));
        f.instruction(&Instruction::I32Const(l.slot as i32));
        f.instruction(&Instruction::Call(exit_func));
        f.instruction(&Instruction::End);
    }
}
