//! The walk over one function body: its operators in order, copied from the original bytes, with
//! the probes' code put before and after the operators that take an edge, at the start of every
//! loop header and cut block (where a path ends and another starts), and at the function's exit —
//! the normal one, and the one of an exception leaving a function that may throw.

use super::emit::{Emitter, Inc};
use super::probes::FuncProbe;
use super::sections::FunctionShift;
use super::sink::{BurstProbes, PathEnd, PathSink, Sink};
use super::switch::{Back, Plain, Relabel, Resumed};
use crate::cfg::{SiteKind, Special};
use crate::cfg::{OPCODE_IF, OPCODE_LOOP};
use crate::module::ModuleInfo;
use pathprof_core::Succ;
use std::borrow::Cow;
use std::convert::Infallible;
use wasm_encoder::reencode::{Error as ReencodeError, Reencode};
use wasm_encoder::{BlockType, Catch, Function, Instruction, ValType};
use wasmparser::FunctionBody;

/// What every instrumented body is emitted from: the module's facts and the profiler's additions
/// that bodies refer to. Bodies are independent of one another and are emitted on all cores.
pub(crate) struct BodyContext<'a> {
    pub info: &'a ModuleInfo,
    pub shift: FunctionShift,
    pub tables_base: u64,
    /// With loop copies: the index of the function their exit calls in the instrumented module.
    pub loop_copy_exit: Option<u32>,
    /// With bursts: the index of the function that appends to the stream.
    pub burst_append: Option<u32>,
}

impl BodyContext<'_> {
    /// The instrumented body (locals and instructions) of defined function `k`; with `to`, the
    /// body of its instrumented resumed function, whose parameters are the function's locals and then
    /// the switch point (see [`switch`](super::switch)).
    pub fn emit(
        &self,
        k: usize,
        p: &FuncProbe,
        func: &FunctionBody,
        to: Option<&Resumed>,
    ) -> Result<Vec<u8>, ReencodeError<Infallible>> {
        let resumed = to.is_some();
        let mut shift = self.shift;
        let index = self.info.num_imported_funcs + k as u32;
        let ty = self.info.func_type(index).expect("validated");
        let mut locals = Vec::new();
        let mut num_locals = ty.params().len() as u32;
        for pair in func.get_locals_reader()? {
            let (count, t) = pair?;
            num_locals += count;
            if !resumed {
                locals.push((count, shift.val_type(t)?));
            }
        }
        // The resumed function's point, a parameter after the locals.
        let point_param = num_locals;
        num_locals += u32::from(resumed);
        let reg_ty = if p.registers.bits == 32 { ValType::I32 } else { ValType::I64 };
        let r = num_locals;
        let s = num_locals + 1;
        let a = num_locals + 2;
        locals.push((1, reg_ty));
        locals.push((2, ValType::I32));
        if !p.counting.loops.is_empty() {
            locals.push((p.counting.loops.len() as u32, ValType::I64));
        }
        let first_run_local = num_locals + 3 + p.counting.loops.len() as u32;
        if !p.counting.runs.is_empty() {
            locals.push((p.counting.runs.len() as u32, ValType::I64));
        }
        // Bursts stream a loop counter's paths when its activation next streams: each counter's
        // count when it last did is kept in a mark (see `sink::burst`).
        let first_mark_local = first_run_local + p.counting.runs.len() as u32;
        let burst = match p.sink {
            Sink::Burst(sink) => Some(BurstProbes {
                sink,
                append: self.burst_append.expect("a module with bursts has their append function"),
                first_mark_local,
            }),
            _ => None,
        };
        let marks = if burst.is_some() { p.counting.loops.len() as u32 } else { 0 };
        if marks > 0 {
            locals.push((marks, ValType::I64));
        }
        let first_sink_local = first_mark_local + marks;
        let sink_locals = p.sink.locals();
        locals.extend(sink_locals.iter().map(|&t| (1, t)));
        let copy_iterations = first_sink_local + sink_locals.len() as u32;
        let bytes = func.as_bytes();
        if !p.copies.is_empty() {
            locals.push((1, ValType::I32));
        }
        let next = copy_iterations + u32::from(!p.copies.is_empty());
        let (resume, kept_cond) = if resumed { (point_param, next) } else { (next, next + 1) };
        if p.switches.is_some() {
            locals.push((1 + u32::from(!resumed), ValType::I32));
        }
        let mut f = Function::new(locals);
        let mut e = Emitter {
            f: &mut f,
            r,
            q: p.sink.preferential_local().map(|i| first_sink_local + i),
            s,
            a,
            bits: p.registers.bits,
            memory: self.info.num_memories,
            func_index: index,
            import: self.info.num_imported_funcs,
            tables_base: self.tables_base,
            first_sink_local,
            array: p.counting.array,
            first_loop_local: num_locals + 3,
            loops: &p.counting.loops,
            first_run_local,
            runs: &p.counting.runs,
            burst,
            copy_iterations,
            resume,
            kept_cond,
        };
        // With whole-function copies, the plain one first (see `switch`), unless it is a function
        // of its own.
        let switches = p.switches.as_ref();
        let both = switches.filter(|_| !resumed);
        if let Some(sw) = both {
            e.f.instruction(&Instruction::Loop(BlockType::Empty));
            e.f.instruction(&Instruction::Block(BlockType::Empty));
            e.f.instruction(&Instruction::Block(p.wrapper));
            e.plain_copy(p, sw, bytes, shift, self.loop_copy_exit, Plain::Inside);
            e.f.instruction(&Instruction::Return);
            e.f.instruction(&Instruction::End);
        }
        // A function that may throw catches what leaves it, counts the path that raised it and
        // throws it on: `block (result exnref) try_table (catch_all_ref 0)` around the body.
        let throws = p.fcfg.cfg.throws();
        if throws {
            e.f.instruction(&Instruction::Block(BlockType::Result(ValType::EXNREF)));
            e.f.instruction(&Instruction::TryTable(p.wrapper, Cow::Borrowed(&[Catch::AllRef { label: 0 }])));
        } else {
            e.f.instruction(&Instruction::Block(p.wrapper));
        }
        let (sink, registers) = (&p.sink, &p.registers);
        sink.enter(&mut e);
        e.set(registers.entry);
        sink.stretch(&mut e, &p.entry_events);
        if let Some(sw) = switches {
            e.open_wrappers(&sw.entry);
            e.dispatch_if_resuming(&sw.entry);
        }

        // Operators are copied from the original body in runs, up to the next one that needs code
        // before or after it or is rewritten; they are not decoded again.
        let offsets = &p.fcfg.op_offsets;
        let mut copied = 0usize;
        let copy_to = |f: &mut Function, i: usize, copied: &mut usize| {
            if *copied < i {
                f.raw(bytes[offsets[*copied] as usize..offsets[i] as usize].iter().copied());
            }
            *copied = i;
        };
        // Loop headers that end paths: a sink may record their paths knowing its code on the way
        // into the loop ran.
        let loop_cut = |b: usize| p.fcfg.blocks[b].loop_header && registers.cut.get(b).copied().unwrap_or(false);
        let mut sites = p.fcfg.sites.iter().peekable();
        let mut specials = p.fcfg.specials.iter().peekable();
        let mut starts = p.fcfg.block_starts.iter().peekable();
        // The plain copy runs the loop copies when there is one.
        let mut copies = p.copies.iter().filter(|_| switches.is_none()).peekable();
        let mut at = switches.map_or(&[][..], |sw| sw.at.as_slice()).iter().peekable();
        let mut stretches = p.stretch_events.iter().peekable();
        // The block of the current operator: blocks start in operator order.
        let mut block = p.fcfg.cfg.entry() as usize;
        // The calls so far, and the one just made with its digit (mode `ippp`).
        let mut calls = 0usize;
        let mut call = None;
        let last_op = p.fcfg.num_ops - 1;
        let mut i = 0;
        while i <= last_op {
            // Straight to the next operator that a site, a special operator or a block start names:
            // the ones before it are copied with it.
            i = [
                sites.peek().map(|s| s.op),
                specials.peek().map(|&&(op, _)| op),
                starts.peek().map(|&&(op, _)| op),
                copies.peek().map(|c| c.end),
                stretches.peek().map(|&(op, _)| *op),
                at.peek().map(|&(op, _)| *op),
            ]
            .into_iter()
            .flatten()
            .fold(last_op, usize::min);
            let site = sites.next_if(|s| s.op == i).map(|s| &s.kind);
            let special = specials.next_if(|&&(op, _)| op == i).map(|&(_, s)| s);
            // The block that starts after this operator, and whether its start ends a path.
            let mut next = None;
            let mut after = None;
            while let Some(&(_, b)) = starts.next_if(|&&(op, _)| op == i) {
                next = Some(b as usize);
                if registers.cut.get(b as usize).copied().unwrap_or(false) {
                    after = Some(b);
                }
            }
            let stretch = stretches.next_if(|&(op, _)| *op == i).map(|(_, v)| v);
            let switch = at.next_if(|&(op, _)| *op == i).map(|(_, s)| s);
            let last = i == last_op;
            let copy_end = copies.peek().is_some_and(|c| c.end == i);
            if site.is_none()
                && special.is_none()
                && after.is_none()
                && stretch.is_none()
                && switch.is_none()
                && !last
                && !copy_end
            {
                block = next.unwrap_or(block);
                i += 1;
                continue;
            }
            copy_to(e.f, i, &mut copied);
            if let Some(close) = switch.and_then(|s| s.close) {
                e.close_wrapper(close);
            }
            // Single-byte opcodes of the operators that sites distinguish.
            let opcode = bytes[offsets[i] as usize];
            let mut correction = Inc::default();
            match site {
                Some(SiteKind::Edge(edge)) => {
                    match p.counting.header_edge[*edge as usize] {
                        Some(how) => {
                            e.count_edge(how, registers.edge[*edge as usize]);
                            if let Some(l) = p.counting.unbumped_by(&p.fcfg, *edge, how) {
                                e.unbump_loop(l);
                            }
                        }
                        None => e.add(registers.edge[*edge as usize]),
                    }
                    if opcode == OPCODE_LOOP {
                        if let Succ::Block(h) = p.fcfg.cfg.edges()[*edge as usize].to {
                            if loop_cut(h as usize) {
                                sink.enter_loop(&mut e);
                            }
                        }
                    }
                }
                // The planner counts no header on a typed-reference branch's edge: it leaves no
                // condition to test.
                Some(SiteKind::Cond(t, nt) | SiteKind::RefCond(t, nt)) => match p.counting.header_edge[*t as usize] {
                    Some(how) => e.count_cond(how, registers.edge[*t as usize], registers.edge[*nt as usize]),
                    None => {
                        // The edge into the code right after the operator (`if`'s then-arm, a
                        // branch's fall-through) corrects an increment added before it for the other
                        // edge.
                        let (before, after) = if opcode == OPCODE_IF { (*nt, *t) } else { (*t, *nt) };
                        let before = registers.edge[before as usize];
                        e.add(before);
                        correction = registers.edge[after as usize].minus(before);
                    }
                },
                Some(SiteKind::Table(entries)) => {
                    if let Some(&off) = registers.tables.get(&i) {
                        // The entries are the table's targets, then its default.
                        e.add_from_table(off, entries.len() as u32 - 1);
                    }
                }
                // After the call, once it has returned.
                Some(SiteKind::Returned(edge)) => correction = registers.edge[*edge as usize],
                Some(SiteKind::TailCall(edge)) => {
                    e.add(registers.edge[*edge as usize]);
                    sink.record(&mut e, PathEnd::Exit);
                    e.flush_loops();
                }
                None => {}
            }
            // The operator anew, when it changes.
            let relabeled = switch.and_then(|s| s.relabel.as_ref());
            let rewritten = match special {
                Some(Special::Return { depth }) => Some(Instruction::Br(match relabeled {
                    Some(Relabel::Return(d)) => *d,
                    _ => depth,
                })),
                Some(Special::Call { callee, .. }) => {
                    // A callee may re-enter this function, whose activations share the slots; the
                    // host functions of an import cannot, and a trap or exit there leaves the slots
                    // as they are.
                    if callee.is_none_or(|c| c >= self.info.num_imported_funcs) {
                        e.flush_some(p.counting.flush_at[block]);
                    }
                    let digit = p.digits.get(calls).copied().flatten();
                    calls += 1;
                    sink.call(&mut e, digit);
                    call = Some(digit);
                    callee.and_then(|c| shift.moved(c)).map(Instruction::Call)
                }
                Some(Special::ReturnCall { func }) => shift.moved(func).map(Instruction::ReturnCall),
                Some(Special::RefFunc { func }) => shift.moved(func).map(Instruction::RefFunc),
                None => match relabeled {
                    Some(Relabel::Op(ins)) => Some(ins.clone()),
                    _ => None,
                },
            };
            if let Some(ins) = rewritten {
                e.f.instruction(&ins);
                copied = i + 1;
            } else if last {
                e.f.instruction(&Instruction::End);
                e.flush_loops();
                sink.record(&mut e, PathEnd::Exit);
                if throws {
                    e.f.instruction(&Instruction::Return);
                    e.f.instruction(&Instruction::End);
                    // The throw edge carries no increment: `r` is the ID of the path that threw.
                    e.flush_loops();
                    sink.record(&mut e, PathEnd::Exit);
                    e.f.instruction(&Instruction::ThrowRef);
                }
                if both.is_some() {
                    // The end of `$switch`, which nothing falls out of.
                    if !throws {
                        e.f.instruction(&Instruction::Return);
                    }
                    e.f.instruction(&Instruction::End);
                    e.f.instruction(&Instruction::Unreachable);
                }
                e.f.instruction(&Instruction::End);
                copied = i + 1;
            }
            if copies.peek().is_some_and(|c| c.start == i) {
                e.choose_loop_copy(&bytes[offsets[i] as usize + 1..offsets[i + 1] as usize]);
            }
            // The operator itself, unless rewritten above.
            copy_to(e.f, i + 1, &mut copied);
            if let Some(c) = copies.next_if(|c| c.end == i) {
                let (start, body, end) =
                    (offsets[c.start] as usize, offsets[c.start + 1] as usize, offsets[i + 1] as usize);
                let exit = self.loop_copy_exit.expect("a module with loop copies has their exit function");
                e.loop_copy(&bytes[start..body], &bytes[body..end], c, exit);
            }
            // A body's wrappers and dispatch come first: resuming skips the rest.
            let open = switch.and_then(|s| s.open.as_ref());
            if let Some(o) = open {
                e.open_wrappers(o);
                match (o.point, after) {
                    (Some(point), Some(b)) => {
                        let back = match to {
                            Some(r) => Back::TailCall { func: r.plain, locals: point_param },
                            None => Back::Branch { throws },
                        };
                        e.instrumented_point(
                            o,
                            point,
                            back,
                            |e| sink.record(e, PathEnd::Header),
                            |e| e.set(registers.start[b as usize]),
                        );
                        block = next.unwrap_or(block);
                        i += 1;
                        continue;
                    }
                    _ => e.dispatch_if_resuming(o),
                }
            }
            e.add(correction);
            if let Some(digit) = call.take() {
                sink.returned(&mut e, digit);
            }
            if let Some(v) = stretch {
                sink.stretch(&mut e, v);
            }
            if let Some(b) = after {
                if let Some(j) = p.counting.header_run[b as usize] {
                    e.count_run(j);
                } else if !p.counting.edge_counted[b as usize] {
                    if loop_cut(b as usize) {
                        sink.record_loop_header(&mut e);
                    } else {
                        sink.record(&mut e, PathEnd::Header);
                    }
                }
                e.set(registers.start[b as usize]);
                if let Some(l) = p.counting.header_loop[b as usize] {
                    e.bump_loop(l, &[Instruction::I64Const(1)]);
                    e.check_counted_loop(l);
                }
            }
            block = next.unwrap_or(block);
            i += 1;
        }
        Ok(f.into_raw_body())
    }

    /// A plain copy of defined function `k`, which has resumed functions `to` and switches to the
    /// instrumented one by a tail call: the function's own body, or with `resumed`, the plain
    /// resumed function's, whose parameters are the function's locals and the point.
    pub fn emit_entry(
        &self,
        k: usize,
        p: &FuncProbe,
        func: &FunctionBody,
        to: &Resumed,
        resumed: bool,
    ) -> Result<Vec<u8>, ReencodeError<Infallible>> {
        let mut shift = self.shift;
        let mut locals = Vec::new();
        if !resumed {
            for pair in func.get_locals_reader()? {
                let (count, t) = pair?;
                locals.push((count, shift.val_type(t)?));
            }
        }
        // Every local but the point is passed.
        let passed = to.params.len() as u32 - 1;
        let copy_iterations = passed + u32::from(resumed);
        let kept_cond = copy_iterations + u32::from(!p.copies.is_empty());
        let added = u32::from(!p.copies.is_empty()) + u32::from(resumed);
        if added > 0 {
            locals.push((added, ValType::I32));
        }
        let mut f = Function::new(locals);
        let mut e = Emitter {
            f: &mut f,
            r: u32::MAX,
            q: None,
            s: u32::MAX,
            a: u32::MAX,
            bits: p.registers.bits,
            memory: self.info.num_memories,
            func_index: self.info.num_imported_funcs + k as u32,
            import: self.info.num_imported_funcs,
            tables_base: self.tables_base,
            first_sink_local: u32::MAX,
            array: u32::MAX,
            first_loop_local: u32::MAX,
            loops: &[],
            first_run_local: u32::MAX,
            runs: &[],
            burst: None,
            copy_iterations,
            resume: passed,
            kept_cond,
        };
        let sw = p.switches.as_ref().expect("a function with a resumed one has switches");
        e.plain_copy(
            p,
            sw,
            func.as_bytes(),
            shift,
            self.loop_copy_exit,
            if resumed {
                Plain::Resumed { func: to.instrumented, locals: passed }
            } else {
                Plain::Entry { func: to.instrumented, locals: passed }
            },
        );
        Ok(f.into_raw_body())
    }
}
