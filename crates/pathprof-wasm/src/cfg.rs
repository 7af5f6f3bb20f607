//! Control-flow graphs of wasm function bodies.
//!
//! Structured control flow makes the CFG explicit: a basic block ends at `br`, `br_if`, `br_table`,
//! the typed-reference branches (`br_on_null`, `br_on_non_null`, `br_on_cast`, `br_on_cast_fail`),
//! `if`, `else`, `return`, `unreachable`, tail calls and at the `end` of a `block` or `if` that is a
//! branch target; a `loop` starts a new block, its header. Back edges are exactly the branches to a
//! `loop` label. Calls do not end blocks, but those that may throw ([`Throws`]): such a call is the
//! last operator of its block, as `throw` and `throw_ref` are.
//!
//! Exceptions ([the exception-handling proposal]'s `try_table`, `throw`, `throw_ref`): a block that
//! may throw gets one [`Succ::Throw`] edge, and the targets of a reachable `try_table`'s catch
//! clauses (blocks after a frame's `end`, loop headers) are the CFG's
//! [landings](pathprof_core::Cfg::landings). A catch to the function's own label needs no landing:
//! it leaves the function, where the path that threw is counted. The legacy `try`/`catch` form is
//! not supported.
//!
//! [the exception-handling proposal]: https://github.com/WebAssembly/exception-handling
//!
//! Besides the [`Cfg`], the builder records where the instrumenter must put code: a [`Site`] for every
//! operator that takes an edge, and the position of every block start (where a path may end and a new
//! one start, at loop headers and cut blocks). Code after an unconditional branch is dead: it belongs
//! to no block and adds no edges.
//!
//! Functions that use legacy exception handling, custom descriptors' branches
//! (`br_on_cast_desc_eq`) or stack switching are reported as [`Unsupported`]; the instrumenter
//! leaves them as they are.
//!
//! The builder validates the body as it reads it (wasmparser's `FuncValidator`, one operator at a
//! time), so that each operator is decoded once for both; it records the offset of every operator and
//! the [`Special`] ones, from which the instrumenter copies the body without decoding it again.

use crate::throws::Throws;
use pathprof_core::cfg::CfgEdge;
use pathprof_core::{BlockId, Cfg, CfgEdgeId, Succ};
use wasmparser::{
    BinaryReaderError, Catch, FuncValidator, FunctionBody, Operator, OperatorsReader, ValidatorResources,
};

/// A basic block: its byte range in the original module, and whether it is a `loop` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub offset: u64,
    pub end: u64,
    pub loop_header: bool,
    /// How many times the block calls a function (`call`, `call_indirect`, `call_ref`).
    pub calls: u32,
    /// How many operators the block has (its static cost).
    pub ops: u32,
}

/// Instrumentation needed at one operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SiteKind {
    /// The operator (`br`, `return`, or the fall-through at `else`, `end`, `loop`) takes this edge.
    Edge(CfgEdgeId),
    /// `br_if` or `if`: the first edge when the condition is non-zero, the second otherwise.
    Cond(CfgEdgeId, CfgEdgeId),
    /// A typed-reference branch (`br_on_null`, `br_on_non_null`, `br_on_cast`, `br_on_cast_fail`):
    /// the first edge when it branches to its label, the second when it falls through. It leaves no
    /// condition to test, so code on its taken edge can only come before it, corrected after it.
    RefCond(CfgEdgeId, CfgEdgeId),
    /// `br_table`: one edge per table entry, then the default.
    Table(Vec<CfgEdgeId>),
    /// A tail call leaves the function by this edge; the path ends before the call.
    TailCall(CfgEdgeId),
    /// A call that may throw, last in its block: when it returns, this edge into the next block is
    /// taken, and its increment is added after the call (the edge by which it throws has none).
    Returned(CfgEdgeId),
}

/// Code to place just before operator `op`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub op: usize,
    pub kind: SiteKind,
}

/// An operator that the instrumenter rewrites or instruments, besides the sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    /// `return`, inside `depth` blocks: it becomes a branch to the end of the body.
    Return { depth: u32 },
    /// `call`, `call_indirect` or `call_ref` (`callee` for `call`; `signature`, the type index the
    /// operator names, for the others): counters are flushed before it.
    Call { callee: Option<u32>, signature: Option<u32> },
    /// `return_call` of `func`, whose index shifts when the profiler adds an import.
    ReturnCall { func: u32 },
    /// `ref.func` of `func`, whose index shifts too.
    RefFunc { func: u32 },
}

/// The CFG of one function body and where to instrument it.
#[derive(Clone, Debug)]
pub struct FuncCfg {
    pub cfg: Cfg,
    pub blocks: Vec<Block>,
    /// Sites in operator order.
    pub sites: Vec<Site>,
    /// `(op, block)`: `block` starts right after operator `op` (for a loop header, `op` is the `loop`).
    pub block_starts: Vec<(usize, BlockId)>,
    /// Every special operator, reachable or not, in operator order.
    pub specials: Vec<(usize, Special)>,
    /// The offset of every operator from the start of the body (its locals come first), then the
    /// body's size: operator `i` is `op_offsets[i]..op_offsets[i + 1]`.
    pub op_offsets: Vec<u32>,
    /// Number of operators, including the final `end`.
    pub num_ops: usize,
    /// Number of `call`, `call_indirect` and `call_ref` operators in reachable code.
    pub num_calls: usize,
    /// The `block`, `loop`, `if` and `try_table` operators, in order, that open a construct
    /// without parameters in reachable code while the enclosing body has nothing on the operand
    /// stack (an `if` its condition only): code may be entered there by a branch from outside.
    pub empty_stack_opens: Vec<usize>,
}

impl FuncCfg {
    /// Reads the operators of `body`, whose CFG this is, in order: `visit` gets each one's index,
    /// the operator, and the block that holds it (`None` in unreachable code).
    pub fn visit_ops(
        &self,
        body: &FunctionBody,
        mut visit: impl FnMut(usize, &Operator, Option<usize>),
    ) -> Result<(), BinaryReaderError> {
        let body_start = body.range().start as u64;
        let mut reader = body.get_operators_reader()?;
        // Blocks are in order of their offsets, as operators are: the first block that starts after
        // the operator.
        let mut after = 0usize;
        let mut i = 0usize;
        while !reader.eof() {
            let at = body_start + u64::from(self.op_offsets[i]);
            let op = reader.read()?;
            while after < self.blocks.len() && self.blocks[after].offset <= at {
                after += 1;
            }
            visit(i, &op, after.checked_sub(1).filter(|&b| at < self.blocks[b].end));
            i += 1;
        }
        Ok(())
    }
}

/// Opcodes the instrumenter and the branch classes tell apart by their first byte.
pub(crate) const OPCODE_BLOCK: u8 = 0x02;
pub(crate) const OPCODE_LOOP: u8 = 0x03;
pub(crate) const OPCODE_IF: u8 = 0x04;
pub(crate) const OPCODE_ELSE: u8 = 0x05;
pub(crate) const OPCODE_END: u8 = 0x0b;
pub(crate) const OPCODE_BR: u8 = 0x0c;
pub(crate) const OPCODE_BR_IF: u8 = 0x0d;
pub(crate) const OPCODE_TRY_TABLE: u8 = 0x1f;

/// The label a `try_table`'s catch clause branches to.
pub(crate) fn catch_label(c: &Catch) -> u32 {
    let (Catch::One { label, .. } | Catch::OneRef { label, .. } | Catch::All { label } | Catch::AllRef { label }) = *c;
    label
}

/// Why a function cannot be instrumented.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

#[derive(Debug)]
enum FrameKind {
    Block,
    Loop { header: BlockId },
    If { else_edge: Option<CfgEdgeId>, has_else: bool },
}

#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    /// Block after the frame's `end` (allocated when first targeted).
    merge: Option<BlockId>,
}

struct Builder {
    num_blocks: u32,
    edges: Vec<CfgEdge>,
    first: Vec<usize>,
    last: Vec<Option<usize>>,
    header: Vec<bool>,
    calls: Vec<u32>,
    sites: Vec<Site>,
    starts: Vec<(usize, BlockId)>,
    specials: Vec<(usize, Special)>,
    current: Option<BlockId>,
    frames: Vec<Frame>,
    landings: Vec<BlockId>,
}

impl Builder {
    fn new_block(&mut self, first_op: usize) -> BlockId {
        let id = self.num_blocks;
        self.num_blocks += 1;
        self.first.push(first_op);
        self.last.push(None);
        self.header.push(false);
        self.calls.push(0);
        id
    }

    /// A block allocated ahead of its start; `start` sets its first operator.
    fn start(&mut self, b: BlockId, after_op: usize) {
        self.first[b as usize] = after_op + 1;
        self.starts.push((after_op, b));
        self.current = Some(b);
    }

    fn edge(&mut self, to: Succ) -> Option<CfgEdgeId> {
        let from = self.current?;
        self.edges.push(CfgEdge { from, to });
        Some(self.edges.len() as CfgEdgeId - 1)
    }

    /// The target of a branch of relative depth `depth` (`None` for the function's own label).
    fn target(&mut self, depth: u32) -> Succ {
        let n = self.frames.len();
        if depth as usize >= n {
            return Succ::Exit;
        }
        let i = n - 1 - depth as usize;
        if let FrameKind::Loop { header } = self.frames[i].kind {
            return Succ::Block(header);
        }
        let merge = match self.frames[i].merge {
            Some(m) => m,
            None => {
                let m = self.new_block(usize::MAX);
                self.frames[i].merge = Some(m);
                m
            }
        };
        Succ::Block(merge)
    }

    fn site(&mut self, op: usize, kind: SiteKind) {
        self.sites.push(Site { op, kind });
    }
}

/// Builds the CFG of a function body.
///
/// The body is validated on the way, operator by operator, with `validator`: the result is `Err` when
/// the body is invalid, and `Ok(Err(_))` when it is valid but uses what the instrumenter does not
/// support.
pub fn build(
    body: &FunctionBody,
    validator: &mut FuncValidator<ValidatorResources>,
    throws: &Throws,
) -> Result<Result<FuncCfg, Unsupported>, BinaryReaderError> {
    let mut binary = body.get_binary_reader();
    validator.read_locals(&mut binary)?;
    let mut reader = OperatorsReader::new(binary);
    let mut unsupported = None;
    let body_start = body.range().start;
    // The offset of every operator from the body's start, a `u32` as a body's size is (operators take
    // two bytes on average in compiled code).
    let mut offsets: Vec<u32> = Vec::with_capacity(body.range().len() / 2);
    let mut b = Builder {
        num_blocks: 0,
        edges: Vec::new(),
        first: Vec::new(),
        last: Vec::new(),
        header: Vec::new(),
        calls: Vec::new(),
        sites: Vec::new(),
        starts: Vec::new(),
        specials: Vec::new(),
        current: None,
        frames: Vec::new(),
        landings: Vec::new(),
    };
    let entry = b.new_block(0);
    b.current = Some(entry);
    let mut num_calls = 0;
    let mut empty_stack_opens = Vec::new();
    while !reader.eof() {
        let offset = reader.original_position();
        let op = &reader.read()?;
        let opens_empty = opens_with_empty_stack(op, validator);
        validator.op(offset, op)?;
        if unsupported.is_some() {
            continue;
        }
        let i = offsets.len();
        offsets.push((offset - body_start) as u32);
        if opens_empty {
            empty_stack_opens.push(i);
        }
        let special = match *op {
            Operator::Return => Some(Special::Return { depth: b.frames.len() as u32 }),
            Operator::Call { function_index } => Some(Special::Call { callee: Some(function_index), signature: None }),
            Operator::CallIndirect { type_index, .. } | Operator::CallRef { type_index } => {
                Some(Special::Call { callee: None, signature: Some(type_index) })
            }
            Operator::ReturnCall { function_index } => Some(Special::ReturnCall { func: function_index }),
            Operator::RefFunc { function_index } => Some(Special::RefFunc { func: function_index }),
            _ => None,
        };
        if let Some(special) = special {
            b.specials.push((i, special));
        }
        // `loop` starts its header before the operator itself.
        if let Operator::Loop { .. } = op {
            let h = b.new_block(i);
            b.header[h as usize] = true;
            if let Some(e) = b.edge(Succ::Block(h)) {
                b.site(i, SiteKind::Edge(e));
            }
            b.starts.push((i, h));
            b.current = Some(h);
            b.frames.push(Frame { kind: FrameKind::Loop { header: h }, merge: None });
        }
        if let Some(cur) = b.current {
            b.last[cur as usize] = Some(i);
            if let Some(Special::Call { callee, .. }) = special {
                b.calls[cur as usize] += 1;
                num_calls += 1;
                if throws.call(callee) {
                    b.edge(Succ::Throw);
                    let next = b.new_block(i + 1);
                    let returned = b.edge(Succ::Block(next)).expect("in a block");
                    b.site(i, SiteKind::Returned(returned));
                    b.start(next, i);
                }
            }
        }
        match *op {
            Operator::Loop { .. } => {}
            Operator::Block { .. } => b.frames.push(Frame { kind: FrameKind::Block, merge: None }),
            Operator::If { .. } => {
                let then_block = b.new_block(i + 1);
                let then_edge = b.edge(Succ::Block(then_block));
                // The else edge's target is patched at `else` or `end`.
                let else_edge = b.edge(Succ::Exit);
                if let (Some(t), Some(e)) = (then_edge, else_edge) {
                    b.site(i, SiteKind::Cond(t, e));
                }
                b.frames.push(Frame { kind: FrameKind::If { else_edge, has_else: false }, merge: None });
                b.start(then_block, i);
            }
            Operator::Else => {
                let merge = b.target(0);
                if let Some(e) = b.edge(merge) {
                    b.site(i, SiteKind::Edge(e));
                }
                let else_block = b.new_block(i + 1);
                let frame = b.frames.last_mut().expect("validated: else inside if");
                if let FrameKind::If { else_edge, has_else } = &mut frame.kind {
                    *has_else = true;
                    if let Some(e) = *else_edge {
                        b.edges[e as usize].to = Succ::Block(else_block);
                    }
                }
                b.start(else_block, i);
            }
            Operator::End => {
                if b.frames.is_empty() {
                    // The function's own end.
                    if let Some(e) = b.edge(Succ::Exit) {
                        b.site(i, SiteKind::Edge(e));
                    }
                    b.current = None;
                    continue;
                }
                let is_if = matches!(b.frames.last().unwrap().kind, FrameKind::If { .. });
                let is_loop = matches!(b.frames.last().unwrap().kind, FrameKind::Loop { .. });
                let targeted = b.frames.last().unwrap().merge.is_some();
                if is_loop || (!is_if && !targeted) {
                    // Nothing branches here: the block simply continues.
                    b.frames.pop();
                    continue;
                }
                let merge = match b.target(0) {
                    Succ::Block(m) => m,
                    Succ::Exit | Succ::Throw => unreachable!("frames is not empty"),
                };
                if let Some(e) = b.edge(Succ::Block(merge)) {
                    b.site(i, SiteKind::Edge(e));
                }
                let frame = b.frames.pop().unwrap();
                if let FrameKind::If { else_edge: Some(e), has_else: false } = frame.kind {
                    b.edges[e as usize].to = Succ::Block(merge);
                }
                b.start(merge, i);
            }
            Operator::Br { relative_depth } => {
                let to = b.target(relative_depth);
                if let Some(e) = b.edge(to) {
                    b.site(i, SiteKind::Edge(e));
                }
                b.current = None;
            }
            Operator::Return => {
                if let Some(e) = b.edge(Succ::Exit) {
                    b.site(i, SiteKind::Edge(e));
                }
                b.current = None;
            }
            Operator::BrIf { relative_depth }
            | Operator::BrOnNull { relative_depth }
            | Operator::BrOnNonNull { relative_depth }
            | Operator::BrOnCast { relative_depth, .. }
            | Operator::BrOnCastFail { relative_depth, .. } => {
                let to = b.target(relative_depth);
                let taken = b.edge(to);
                let next = b.new_block(i + 1);
                let fall = b.edge(Succ::Block(next));
                if let (Some(t), Some(f)) = (taken, fall) {
                    let by_reference = !matches!(op, Operator::BrIf { .. });
                    b.site(i, if by_reference { SiteKind::RefCond(t, f) } else { SiteKind::Cond(t, f) });
                }
                b.start(next, i);
            }
            Operator::BrTable { ref targets } => {
                let depths: Vec<u32> =
                    targets.targets().chain(std::iter::once(Ok(targets.default()))).collect::<Result<_, _>>()?;
                if b.current.is_some() {
                    // One CFG edge per distinct target, in order of first appearance.
                    let mut seen: Vec<(Succ, CfgEdgeId)> = Vec::new();
                    let mut entries = Vec::with_capacity(depths.len());
                    for d in depths {
                        let to = b.target(d);
                        let e = match seen.iter().find(|(s, _)| *s == to) {
                            Some(&(_, e)) => e,
                            None => {
                                let e = b.edge(to).unwrap();
                                seen.push((to, e));
                                e
                            }
                        };
                        entries.push(e);
                    }
                    b.site(i, SiteKind::Table(entries));
                } else {
                    for d in depths {
                        b.target(d);
                    }
                }
                b.current = None;
            }
            Operator::ReturnCall { .. } | Operator::ReturnCallIndirect { .. } | Operator::ReturnCallRef { .. } => {
                if let Some(e) = b.edge(Succ::Exit) {
                    b.site(i, SiteKind::TailCall(e));
                }
                b.current = None;
            }
            Operator::Unreachable => b.current = None,
            Operator::TryTable { ref try_table } => {
                // Catch labels are relative to the frames around the `try_table`.
                if b.current.is_some() {
                    for c in &try_table.catches {
                        if let Succ::Block(h) = b.target(catch_label(c)) {
                            b.landings.push(h);
                        }
                    }
                }
                b.frames.push(Frame { kind: FrameKind::Block, merge: None });
            }
            Operator::Throw { .. } | Operator::ThrowRef => {
                b.edge(Succ::Throw);
                b.current = None;
            }
            Operator::Try { .. }
            | Operator::Catch { .. }
            | Operator::CatchAll
            | Operator::Delegate { .. }
            | Operator::Rethrow { .. } => {
                unsupported = Some(Unsupported("uses legacy exception handling (try, catch, delegate)".into()));
            }
            Operator::BrOnCastDescEq { .. } | Operator::BrOnCastDescEqFail { .. } => {
                unsupported = Some(Unsupported("uses custom descriptors' branches (br_on_cast_desc_eq)".into()));
            }
            Operator::Resume { .. }
            | Operator::ResumeThrow { .. }
            | Operator::Switch { .. }
            | Operator::Suspend { .. } => {
                unsupported = Some(Unsupported("uses stack switching".into()));
            }
            _ => {}
        }
    }
    reader.finish()?;
    if let Some(unsupported) = unsupported {
        return Ok(Err(unsupported));
    }
    let num_ops = offsets.len();
    offsets.push(body.range().len() as u32);
    let offset_of = |i: usize| (body_start + offsets[i.min(num_ops)] as usize) as u64;
    let blocks: Vec<Block> = (0..b.num_blocks as usize)
        .map(|k| {
            let first = b.first[k].min(num_ops);
            let end = b.last[k].map_or(first, |l| l + 1).max(first);
            Block {
                offset: offset_of(first),
                end: offset_of(end),
                loop_header: b.header[k],
                calls: b.calls[k],
                ops: (end - first) as u32,
            }
        })
        .collect();
    // Blocks renumbered in the order of their start position, so that block ids ascend with offsets.
    let n = blocks.len();
    let mut start_op = vec![usize::MAX; n];
    start_op[entry as usize] = 0;
    for &(op, b) in &b.starts {
        // A header starts at its `loop` operator, other blocks after `op`.
        start_op[b as usize] = if blocks[b as usize].loop_header { op } else { op + 1 };
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&k| (start_op[k], k));
    let mut new_id = vec![0u32; n];
    for (new, &old) in order.iter().enumerate() {
        new_id[old] = new as u32;
    }
    for e in &mut b.edges {
        e.from = new_id[e.from as usize];
        if let Succ::Block(w) = &mut e.to {
            *w = new_id[*w as usize];
        }
    }
    for s in &mut b.starts {
        s.1 = new_id[s.1 as usize];
    }
    let landings = b.landings.iter().map(|&h| new_id[h as usize]).collect();
    Ok(Ok(FuncCfg {
        cfg: Cfg::from_edges(b.num_blocks, new_id[entry as usize], b.edges).with_landings(landings),
        blocks: order.iter().map(|&old| blocks[old]).collect(),
        sites: b.sites,
        block_starts: b.starts,
        specials: b.specials,
        op_offsets: offsets,
        num_ops,
        num_calls,
        empty_stack_opens,
    }))
}

/// Whether `op` opens a construct without parameters, in reachable code, with nothing of the
/// enclosing body's on the operand stack but an `if`'s condition (asked before `op` is validated).
fn opens_with_empty_stack(op: &Operator, validator: &FuncValidator<ValidatorResources>) -> bool {
    let (ty, operands) = match op {
        Operator::Block { blockty } | Operator::Loop { blockty } => (*blockty, 0),
        Operator::If { blockty } => (*blockty, 1),
        Operator::TryTable { try_table } => (try_table.ty, 0),
        _ => return false,
    };
    if matches!(ty, wasmparser::BlockType::FuncType(_)) {
        return false;
    }
    validator
        .get_control_frame(0)
        .is_some_and(|frame| !frame.unreachable && validator.operand_stack_height() as usize == frame.height + operands)
}
