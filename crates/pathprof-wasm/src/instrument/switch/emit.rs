//! The code of the switches: wrappers, dispatch, the flag's checks and the tail calls between
//! copies, and the plain copy of a body.

use super::{Back, Close, Open, Plain, Relabel, Switches};
use crate::cfg::Special;
use crate::instrument::emit::Emitter;
use crate::instrument::probes::FuncProbe;
use crate::instrument::sections::FunctionShift;
use std::borrow::Cow;
use wasm_encoder::{BlockType, Instruction};
impl Emitter<'_> {
    /// The flag, loaded atomically: a plain load could be merged with an earlier one where no
    /// store of the module's comes between them, and miss the host's.
    fn load_flag(&mut self) {
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32AtomicLoad(self.flag_word()));
    }

    /// Before an operator: the end of the wrapper before it.
    pub fn close_wrapper(&mut self, close: Close) {
        let f = &mut *self.f;
        match close {
            Close::Block => {
                f.instruction(&Instruction::End);
            }
            Close::If { then_last } => {
                // cond = resume ? arm of the point : cond
                f.instruction(&Instruction::LocalSet(self.kept_cond));
                f.instruction(&Instruction::End);
                match then_last {
                    Some(last) => {
                        f.instruction(&Instruction::LocalGet(self.resume));
                        f.instruction(&Instruction::I32Const(last as i32));
                        f.instruction(&Instruction::I32LeU);
                    }
                    None => {
                        f.instruction(&Instruction::I32Const(0));
                    }
                }
                f.instruction(&Instruction::LocalGet(self.kept_cond));
                f.instruction(&Instruction::LocalGet(self.resume));
                f.instruction(&Instruction::Select);
            }
        }
    }

    /// A body's wrappers, at its start.
    pub fn open_wrappers(&mut self, o: &Open) {
        for _ in 0..o.wrappers {
            self.f.instruction(&Instruction::Block(BlockType::Empty));
        }
    }

    /// The branch to the end of the wrapper before the child that holds point `resume`, `base`
    /// labels inside the wrappers.
    fn dispatch(&mut self, o: &Open, base: u32) {
        let (first, end) = (o.bounds[0], o.bounds[o.wrappers as usize]);
        let entries: Vec<u32> =
            (first..end).map(|id| base + (o.bounds.partition_point(|&b| b <= id) - 1) as u32).collect();
        self.f.instruction(&Instruction::LocalGet(self.resume));
        self.f.instruction(&Instruction::I32Const(first as i32));
        self.f.instruction(&Instruction::I32Sub);
        self.f.instruction(&Instruction::BrTable(Cow::Owned(entries), base + o.wrappers - 1));
    }

    /// While resuming, the dispatch (a body that is not a switch point's).
    pub fn dispatch_if_resuming(&mut self, o: &Open) {
        if o.wrappers > 0 {
            self.f.instruction(&Instruction::LocalGet(self.resume));
            self.f.instruction(&Instruction::If(BlockType::Empty));
            self.dispatch(o, 1);
            self.f.instruction(&Instruction::End);
        }
    }

    /// At a switch point, when resuming: the dispatch to an inner point, or, at this one, the end of
    /// resuming; `base` labels inside the wrappers. Leaves `resume` 0 when it falls through.
    fn arrive(&mut self, o: &Open, point: u32, base: u32) {
        if o.wrappers > 0 {
            self.f.instruction(&Instruction::LocalGet(self.resume));
            self.f.instruction(&Instruction::I32Const(point as i32));
            self.f.instruction(&Instruction::I32Ne);
            self.f.instruction(&Instruction::If(BlockType::Empty));
            self.dispatch(o, base + 1);
            self.f.instruction(&Instruction::End);
        }
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalSet(self.resume));
    }

    /// `resume = point; br depth`: to the other copy in the same function.
    fn leave(&mut self, point: u32, depth: u32) {
        self.f.instruction(&Instruction::I32Const(point as i32));
        self.f.instruction(&Instruction::LocalSet(self.resume));
        self.f.instruction(&Instruction::Br(depth));
    }

    /// The instrumented copy's code at switch point `point`'s header (after its wrappers): unless
    /// resuming there, the path end (`count`), then the start of a path (`start`), then back to the
    /// plain copy if the flag is clear, as `back` says.
    pub fn instrumented_point(
        &mut self,
        o: &Open,
        point: u32,
        back: Back,
        count: impl FnOnce(&mut Self),
        start: impl FnOnce(&mut Self),
    ) {
        self.f.instruction(&Instruction::Block(BlockType::Empty));
        self.f.instruction(&Instruction::LocalGet(self.resume));
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.arrive(o, point, 2);
        self.f.instruction(&Instruction::Br(1));
        self.f.instruction(&Instruction::End);
        count(self);
        self.f.instruction(&Instruction::End);
        start(self);
        self.load_flag();
        self.f.instruction(&Instruction::I32Eqz);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        match back {
            // The function's label, the other wrapper when it throws, then `$switch`.
            Back::Branch { throws } => self.leave(point, o.depth + 2 + u32::from(throws)),
            Back::TailCall { func, locals } => self.tail_call(func, locals, point),
        }
        self.f.instruction(&Instruction::End);
    }

    /// The plain copy's code at a body's start (after its wrappers): at switch point's header, on
    /// to the instrumented copy if the flag is set.
    fn plain_open(&mut self, o: &Open, to: Plain) {
        let Some(point) = o.point else {
            self.dispatch_if_resuming(o);
            return;
        };
        self.f.instruction(&Instruction::LocalGet(self.resume));
        self.load_flag();
        self.f.instruction(&Instruction::I32Or);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::LocalGet(self.resume));
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.arrive(o, point, 2);
        self.f.instruction(&Instruction::End);
        self.load_flag();
        self.f.instruction(&Instruction::If(BlockType::Empty));
        match to {
            // `$plain`, then `$instrumented`.
            Plain::Inside => self.leave(point, o.depth + 3),
            Plain::Entry { func, locals } | Plain::Resumed { func, locals } => self.tail_call(func, locals, point),
        }
        self.f.instruction(&Instruction::End);
        self.f.instruction(&Instruction::End);
    }

    /// The entry copy's switch at point `point` (0: the entry): a tail call of the resumed function
    /// `func` with the first `locals` locals and the point.
    fn tail_call(&mut self, func: u32, locals: u32, point: u32) {
        for l in 0..locals {
            self.f.instruction(&Instruction::LocalGet(l));
        }
        self.f.instruction(&Instruction::I32Const(point as i32));
        self.f.instruction(&Instruction::ReturnCall(func));
    }

    /// The plain copy of `p`'s body (`bytes`): its original operators with the switches of `sw`, the
    /// calls' function indices moved by `shift`, and the loop copies of `p` (their exit calls
    /// `loop_copy_exit`). Inside `$plain`, with `to` [`Plain::Inside`]; or the whole body of the
    /// entry copy, with no wrappers, which switches by a tail call.
    pub(crate) fn plain_copy(
        &mut self,
        p: &FuncProbe,
        sw: &Switches,
        bytes: &[u8],
        shift: FunctionShift,
        loop_copy_exit: Option<u32>,
        to: Plain,
    ) {
        // On to the instrumented copy, from the function's start.
        match to {
            Plain::Inside => {
                self.f.instruction(&Instruction::I32Const(0));
                self.f.instruction(&Instruction::I32Load(self.flag_word()));
                self.f.instruction(&Instruction::BrIf(1));
            }
            Plain::Entry { func, locals } => {
                self.f.instruction(&Instruction::I32Const(0));
                self.f.instruction(&Instruction::I32Load(self.flag_word()));
                self.f.instruction(&Instruction::If(BlockType::Empty));
                self.tail_call(func, locals, 0);
                self.f.instruction(&Instruction::End);
            }
            // Entered from the instrumented copy, which found the flag clear.
            Plain::Resumed { .. } => {}
        }
        // Wrappers, dispatch and renumbered labels, but in the entry copy, which is never resumed.
        let inside = !matches!(to, Plain::Entry { .. });
        if inside {
            self.open_wrappers(&sw.entry);
            self.dispatch_if_resuming(&sw.entry);
        }
        let offsets = &p.fcfg.op_offsets;
        let mut copied = 0usize;
        let mut at = sw.at.iter().peekable();
        let mut specials = p.fcfg.specials.iter().peekable();
        let mut starts = p.copies.iter().peekable();
        let mut ends = p.copies.iter().peekable();
        let n = self.copy_iterations;
        for i in 0..p.fcfg.num_ops {
            let s = at.next_if(|(op, _)| *op == i).map(|(_, s)| s);
            let special = specials.next_if(|&&(op, _)| op == i).map(|&(_, s)| s);
            let copy_start = starts.next_if(|c| c.start == i);
            let copy_end = ends.next_if(|c| c.end == i);
            if s.is_none() && special.is_none() && copy_start.is_none() && copy_end.is_none() {
                continue;
            }
            self.f.raw(bytes[offsets[copied] as usize..offsets[i] as usize].iter().copied());
            if let Some(close) = s.and_then(|s| s.close).filter(|_| inside) {
                self.close_wrapper(close);
            }
            if copy_start.is_some() {
                self.f.instruction(&Instruction::I32Const(0));
                self.f.instruction(&Instruction::LocalSet(n));
                if inside {
                    // The loop may be where the instrumented copy resumes this one.
                    self.f.instruction(&Instruction::I32Const(0));
                    self.f.instruction(&Instruction::LocalSet(self.resume));
                }
            }
            let relabeled = match s.and_then(|s| s.relabel.as_ref()).filter(|_| inside) {
                Some(Relabel::Op(ins)) => Some(ins.clone()),
                _ => None,
            };
            let rewritten = relabeled.or_else(|| match special {
                Some(Special::Call { callee: Some(c), .. }) => shift.moved(c).map(Instruction::Call),
                Some(Special::ReturnCall { func }) => shift.moved(func).map(Instruction::ReturnCall),
                Some(Special::RefFunc { func }) => shift.moved(func).map(Instruction::RefFunc),
                _ => None,
            });
            match rewritten {
                Some(ins) => {
                    self.f.instruction(&ins);
                }
                None => {
                    self.f.raw(bytes[offsets[i] as usize..offsets[i + 1] as usize].iter().copied());
                }
            }
            copied = i + 1;
            if copy_start.is_some() {
                self.f.instruction(&Instruction::LocalGet(n));
                self.f.instruction(&Instruction::I32Const(1));
                self.f.instruction(&Instruction::I32Add);
                self.f.instruction(&Instruction::LocalSet(n));
            } else if let Some(o) = s.and_then(|s| s.open.as_ref()) {
                match to {
                    Plain::Inside | Plain::Resumed { .. } => {
                        self.open_wrappers(o);
                        self.plain_open(o, to);
                    }
                    Plain::Entry { func, locals } => {
                        if let Some(point) = o.point {
                            self.load_flag();
                            self.f.instruction(&Instruction::If(BlockType::Empty));
                            self.tail_call(func, locals, point);
                            self.f.instruction(&Instruction::End);
                        }
                    }
                }
            }
            if let Some(c) = copy_end {
                let exit = loop_copy_exit.expect("a module with loop copies has their exit function");
                self.loop_copy_exit_check(c, exit);
            }
        }
        self.f.raw(bytes[offsets[copied] as usize..offsets[p.fcfg.num_ops] as usize].iter().copied());
    }
}
