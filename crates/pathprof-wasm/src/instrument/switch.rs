//! Whole functions that also run as a copy without probes: Arnold–Ryder duplication [AR01 §3] for
//! PEP's sampling sink [PEP05 §3.3], which only records path ends while the host's flag is set.
//!
//! In its simplest form (kept for functions whose locals cannot be passed; most functions are split
//! in three, below), a function's body is emitted twice, in one function: its original operators
//! (the *plain* copy) and the instrumented ones, which compute the path register and sample. Two
//! labels join them:
//!
//! ```text
//! loop $switch
//!   block $instrumented
//!     block $plain (result …)
//!       flag ≠ 0 → br $instrumented           ;; the check at the entry
//!       … the original operators …
//!     end
//!     return
//!   end
//!   … the instrumented body …
//!   return
//! end
//! ```
//!
//! The plain copy checks the flag at the function's entry and at the loop headers where it can
//! switch (the *switch points*); where it finds the flag set, it branches to the instrumented copy,
//! which resumes at the same point: the start of the function, or the same loop header with the
//! path register set as a path starting there sets it. The instrumented copy checks the flag at its
//! switch points after their path end, and where it finds it clear, goes back the same way through
//! `$switch`. Both copies share the function's locals, so nothing but the point needs passing: a
//! local, `resume`, holds its number (0 for none).
//!
//! Structured control flow has no branch into a loop, so each copy reaches a switch point by
//! *dispatch*: every body (of the function, a `block`, `loop`, `if` arm or `try_table`) that holds
//! switch points gets one wrapper block per child construct holding some, each wrapper ending right
//! before its child, and a `br_table` on `resume` at the body's start that branches to the end of the
//! wrapper before the child holding the point. An `if` holding some keeps its condition in a local
//! before the wrapper's end, and takes the arm of the point instead while `resume` is set. The
//! original branches that cross wrappers get their depths renumbered. A loop qualifies as a switch
//! point when it and every construct around it is entered with nothing of its enclosing body's on
//! the operand stack (the wrappers carry nothing) and takes no parameters; a loop that does not is
//! not a switch point, and either copy keeps running through it until the next one.
//!
//! The function that holds both copies is big, and a call pays for its frame (the registers it
//! saves) even when only the plain copy runs: small functions called at high rates (fib2's) cost
//! half as much again. So the function itself is an *entry copy*, its original operators alone,
//! which checks the flag at its entry and switch points and, where it finds it set, calls in a tail
//! call (`return_call`) the *instrumented resumed function*, passing its parameters and locals and
//! the point. That function is the instrumented copy with its dispatch, its locals its parameters;
//! where it finds the flag clear it calls the *plain resumed function* the same way, the plain copy
//! with its dispatch, which calls the instrumented one again once the flag is set. A function whose
//! locals cannot be passed (more than a function's parameters, or one without a default value)
//! holds both copies itself, as above.
//!
//! The dispatch is not free: the plain resumed function of a long activation (heapsort's `main`,
//! after the first sample) runs its loops a quarter to a third slower than the entry copy, and the
//! instrumented one slower than the instrumented function alone, which is why whole-function
//! copies are a mode of their own (`pep:dup`) and not the default (see docs/PERFORMANCE.md).
//!
//! A path that ran partly in the plain copy is never recorded: the instrumented copy records the
//! paths that start at the switch point or later, exactly as the instrumented function alone does
//! while the flag is set, and samples are only taken while the flag is set.

use super::emit::{word, Emitter};
use super::sections::FunctionShift;
use super::FuncProbe;
use crate::abi::SAMPLE_FLAG;
use crate::cfg::{
    catch_label, Special, OPCODE_BLOCK, OPCODE_ELSE, OPCODE_END, OPCODE_IF, OPCODE_LOOP, OPCODE_TRY_TABLE,
};
use crate::module::ModuleInfo;
use std::borrow::Cow;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, Catch, Instruction, ValType};
use wasmparser::{BinaryReaderError, FunctionBody, Operator};

/// Where a function's two copies switch, and what each operator needs for it.
///
/// Switch points are numbered from 1 in the order of their `loop` operators.
pub(crate) struct Switches {
    /// The function body's wrappers and dispatch, at its start.
    pub entry: Open,
    /// What operators need, in operator order.
    pub at: Vec<(usize, OpSwitch)>,
}

/// Where a plain copy runs, and how it switches to the instrumented one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plain {
    /// Inside the function that holds both copies: by a branch to `$instrumented`.
    Inside,
    /// As the body of a function of its own (the entry copy), whose `locals` first locals (its
    /// parameters and locals) and the point it passes to the instrumented copy `func` in a tail call.
    Entry { func: u32, locals: u32 },
    /// As the body of the plain resumed function, entered at the point its last parameter gives:
    /// by a tail call of the instrumented copy `func`, as the entry copy.
    Resumed { func: u32, locals: u32 },
}

/// How the instrumented copy goes back to the plain one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Back {
    /// By a branch to `$switch`, past the body's wrapper and, when it may throw (`throws`), the
    /// handler's.
    Branch { throws: bool },
    /// By a tail call of the plain resumed function `func`, passing the first `locals` locals.
    TailCall { func: u32, locals: u32 },
}

/// What one operator needs in both copies.
#[derive(Default)]
pub(crate) struct OpSwitch {
    /// Before the operator: the end of the wrapper before it.
    pub close: Option<Close>,
    /// The operator anew, its labels renumbered past wrappers.
    pub relabel: Option<Relabel>,
    /// After the operator, which starts a body: its wrappers and dispatch.
    pub open: Option<Open>,
}

/// An operator whose labels cross wrappers.
pub(crate) enum Relabel {
    /// A branch or a `try_table`, re-encoded.
    Op(Instruction<'static>),
    /// `return`: the depth of the function's label, which the instrumented copy branches to.
    Return(u32),
}

/// The end of a wrapper, right before the construct it leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Close {
    /// A `block`, `loop` or `try_table`.
    Block,
    /// An `if`: its condition is kept in a local before the wrapper's end, and while resuming, the
    /// arm of the point wins: the then-arm for points up to `then_last`, the else-arm after.
    If { then_last: Option<u32> },
}

/// A body's wrappers and the dispatch at its start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Open {
    /// One per child construct holding switch points; the first child's is the innermost.
    pub wrappers: u32,
    /// The first point of each wrapped child, then one past the last child's last.
    pub bounds: Vec<u32>,
    /// The switch point at whose loop header the body starts.
    pub point: Option<u32>,
    /// Labels between the code right after the wrappers and the function's label, which this
    /// depth names.
    pub depth: u32,
}

/// A construct of the body, in the order of its opening operator.
struct Construct {
    /// The body holding it: the construct's index plus one and its arm (0, or 1 for an else-arm);
    /// 0 for the function's body.
    body: usize,
    is_if: bool,
    /// A loop that is a switch point (numbered `first`).
    point: bool,
    /// Points numbered before it, before its else-arm, and before its end (plus one).
    first: u32,
    else_first: u32,
    last: u32,
}

/// Plans the switches of `p`'s function, whose body is `body`.
pub(crate) fn plan(p: &FuncProbe, body: &FunctionBody) -> Result<Switches, BinaryReaderError> {
    let fcfg = &p.fcfg;
    let bytes = body.as_bytes();
    let opcode = |i: usize| bytes[fcfg.op_offsets[i] as usize];
    // The headers that start paths, by their `loop` operator.
    let mut path_header = vec![false; fcfg.num_ops];
    for &(op, b) in &fcfg.block_starts {
        if fcfg.blocks[b as usize].loop_header && p.cut.get(b as usize).copied().unwrap_or(false) {
            path_header[op] = true;
        }
    }
    // Constructs and points. `open` holds the constructs around the operator: index, arm, and
    // whether they and all around them are entered with an empty stack.
    let mut constructs: Vec<Construct> = Vec::new();
    let mut open: Vec<(usize, usize, bool)> = Vec::new();
    let mut next = 1u32;
    let last_op = fcfg.num_ops - 1;
    for (i, &is_header) in path_header.iter().enumerate().take(last_op) {
        match opcode(i) {
            OPCODE_BLOCK | OPCODE_LOOP | OPCODE_IF | OPCODE_TRY_TABLE => {
                let (body, clean_around) = open.last().map_or((0, true), |&(c, arm, clean)| (2 * (c + 1) + arm, clean));
                let clean = clean_around && fcfg.empty_stack_opens.binary_search(&i).is_ok();
                let is_point = clean && opcode(i) == OPCODE_LOOP && is_header;
                constructs.push(Construct {
                    body,
                    is_if: opcode(i) == OPCODE_IF,
                    point: is_point,
                    first: next,
                    else_first: 0,
                    last: 0,
                });
                next += u32::from(is_point);
                open.push((constructs.len() - 1, 0, clean));
            }
            OPCODE_ELSE => {
                let top = open.last_mut().expect("validated: else inside if");
                top.1 = 1;
                constructs[top.0].else_first = next;
            }
            OPCODE_END => {
                let (c, arm, _) = open.pop().expect("validated: end of a construct");
                if arm == 0 {
                    constructs[c].else_first = next;
                }
                constructs[c].last = next;
            }
            _ => {}
        }
    }
    // The children holding points of every body (0: the function's; 2(c + 1) + arm: construct c's).
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); 2 * (constructs.len() + 1)];
    for (c, k) in constructs.iter().enumerate() {
        if k.last > k.first {
            children[k.body].push(c);
        }
    }
    let open_of = |key: usize, point: Option<u32>, depth_before: u32| -> Option<Open> {
        let ch = &children[key];
        if ch.is_empty() && point.is_none() {
            return None;
        }
        let mut bounds: Vec<u32> = ch.iter().map(|&c| constructs[c].first).collect();
        if let Some(&c) = ch.last() {
            bounds.push(constructs[c].last);
        }
        Some(Open { wrappers: ch.len() as u32, bounds, point, depth: depth_before + ch.len() as u32 })
    };

    // Second pass: wrappers open in each body around the operator, and the operators' labels.
    // `frames`: (construct or usize::MAX for the function's body, wrappers still open).
    let mut frames: Vec<(usize, u32)> = vec![(usize::MAX, 0)];
    let entry = open_of(0, None, 0).unwrap_or_default();
    frames[0].1 = entry.wrappers;
    let mut at: Vec<(usize, OpSwitch)> = Vec::new();
    let mut reader = body.get_operators_reader()?;
    let mut c_next = 0usize;
    // The wrappers that a branch of relative depth `depth` leaves (the function's label is the
    // deepest); and the labels around the code at the end of `frames`, up to the function's.
    let shift = |frames: &[(usize, u32)], depth: u32| -> u32 {
        frames.iter().rev().take(depth as usize + 1).map(|&(_, w)| w).sum()
    };
    let all_wrappers = |frames: &[(usize, u32)]| -> u32 { frames.iter().map(|&(_, w)| w).sum() };
    let labels_open = |frames: &[(usize, u32)]| -> u32 { (frames.len() - 1) as u32 + all_wrappers(frames) };
    let mut i = 0usize;
    while !reader.eof() {
        let op = reader.read()?;
        let mut s = OpSwitch::default();
        let relabel = |d: u32, frames: &[(usize, u32)]| d + shift(frames, d);
        match &op {
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } | Operator::TryTable { .. } => {
                let c = c_next;
                c_next += 1;
                let k = &constructs[c];
                if k.last > k.first {
                    frames.last_mut().expect("inside the body").1 -= 1;
                    s.close = Some(if k.is_if {
                        Close::If { then_last: (k.else_first > k.first).then(|| k.else_first - 1) }
                    } else {
                        Close::Block
                    });
                }
                if let Operator::TryTable { try_table } = &op {
                    let moved = try_table.catches.iter().any(|c| shift(&frames, catch_label(c)) > 0);
                    if moved {
                        let catches = try_table
                            .catches
                            .iter()
                            .map(|c| {
                                let l = relabel(catch_label(c), &frames);
                                match *c {
                                    wasmparser::Catch::One { tag, .. } => Catch::One { tag, label: l },
                                    wasmparser::Catch::OneRef { tag, .. } => Catch::OneRef { tag, label: l },
                                    wasmparser::Catch::All { .. } => Catch::All { label: l },
                                    wasmparser::Catch::AllRef { .. } => Catch::AllRef { label: l },
                                }
                            })
                            .collect::<Vec<_>>();
                        let ty = block_type(try_table.ty);
                        s.relabel = Some(Relabel::Op(Instruction::TryTable(ty, Cow::Owned(catches))));
                    }
                }
                frames.push((c, 0));
                let depth = labels_open(&frames);
                s.open = open_of(2 * (c + 1), k.point.then_some(k.first), depth);
                frames.last_mut().expect("just pushed").1 = s.open.as_ref().map_or(0, |o| o.wrappers);
            }
            Operator::Else => {
                let top = frames.last().expect("inside an if").0;
                debug_assert_eq!(frames.last().map(|f| f.1), Some(0), "every wrapper ends before its child");
                let depth = labels_open(&frames);
                s.open = open_of(2 * (top + 1) + 1, None, depth);
                frames.last_mut().expect("inside an if").1 = s.open.as_ref().map_or(0, |o| o.wrappers);
            }
            Operator::End if frames.len() > 1 => {
                frames.pop();
            }
            Operator::Br { relative_depth } if shift(&frames, *relative_depth) > 0 => {
                s.relabel = Some(Relabel::Op(Instruction::Br(relabel(*relative_depth, &frames))));
            }
            Operator::BrIf { relative_depth } if shift(&frames, *relative_depth) > 0 => {
                s.relabel = Some(Relabel::Op(Instruction::BrIf(relabel(*relative_depth, &frames))));
            }
            Operator::BrTable { targets } => {
                let depths: Vec<u32> = targets.targets().collect::<Result<_, _>>()?;
                let default = targets.default();
                if depths.iter().chain([&default]).any(|&d| shift(&frames, d) > 0) {
                    let depths = depths.into_iter().map(|d| relabel(d, &frames)).collect::<Vec<_>>();
                    let default = relabel(default, &frames);
                    s.relabel = Some(Relabel::Op(Instruction::BrTable(Cow::Owned(depths), default)));
                }
            }
            Operator::Return if all_wrappers(&frames) > 0 => {
                s.relabel = Some(Relabel::Return(labels_open(&frames)));
            }
            _ => {}
        }
        if s.close.is_some() || s.relabel.is_some() || s.open.is_some() {
            at.push((i, s));
        }
        i += 1;
    }
    Ok(Switches { entry, at })
}

fn block_type(ty: wasmparser::BlockType) -> BlockType {
    RoundtripReencoder.block_type(ty).expect("block types re-encode")
}

impl Emitter<'_> {
    fn flag(&self) -> wasm_encoder::MemArg {
        word(self.memory, SAMPLE_FLAG)
    }

    /// The flag, loaded atomically: a plain load could be merged with an earlier one where no
    /// store of the module's comes between them, and miss the host's.
    fn load_flag(&mut self) {
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32AtomicLoad(self.flag()));
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
    pub(super) fn plain_copy(
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
                self.f.instruction(&Instruction::I32Load(self.flag()));
                self.f.instruction(&Instruction::BrIf(1));
            }
            Plain::Entry { func, locals } => {
                self.f.instruction(&Instruction::I32Const(0));
                self.f.instruction(&Instruction::I32Load(self.flag()));
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
                Some(Special::Call { callee: Some(c) }) => shift.moved(c).map(Instruction::Call),
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

/// The function that a function's entry copy switches to: its whole body as both copies (as
/// [`plan`] lays them out), taking the function's parameters and locals as parameters, then the
/// point to resume at.
pub(crate) struct Resumed {
    /// The indices of the plain and the instrumented resumed functions in the instrumented module
    /// (set once every function is planned).
    pub plain: u32,
    pub instrumented: u32,
    pub params: Vec<ValType>,
    pub results: Vec<ValType>,
}

/// Most parameters a function may take (wasmparser's limit, which Wasmtime applies).
const MAX_PARAMS: usize = 1000;

impl Resumed {
    /// The resumed function of defined function `index` (`body`), when it can have one: when its
    /// parameters, locals and the point fit in a function's parameters, and every local has a
    /// default value (the entry copy passes them before they are set).
    pub fn of(info: &ModuleInfo, index: u32, body: &FunctionBody) -> Result<Option<Resumed>, BinaryReaderError> {
        let ty = info.func_type(index).expect("validated: every function has a type");
        let val = |t: wasmparser::ValType| RoundtripReencoder.val_type(t).expect("core value types re-encode");
        let mut params: Vec<ValType> = ty.params().iter().map(|&t| val(t)).collect();
        for pair in body.get_locals_reader()? {
            let (count, t) = pair?;
            if params.len() + count as usize >= MAX_PARAMS || !t.is_defaultable() {
                return Ok(None);
            }
            params.extend(std::iter::repeat_n(val(t), count as usize));
        }
        params.push(ValType::I32);
        Ok(Some(Resumed { plain: 0, instrumented: 0, params, results: ty.results().iter().map(|&t| val(t)).collect() }))
    }
}
