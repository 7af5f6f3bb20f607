//! The branches of function bodies as a processor retires them, for the hardware path profiler's
//! simulator [PPP07 §5.2]: which operator takes each CFG edge and how (a two-way branch taken or
//! not, a jump, an entry of a `br_table`, a return, or no branch at all where a block falls through
//! into the next), and for every block its calls and the instructions and memory accesses before,
//! between and after them (the block event counter that travels with each branch [PPP07 §5.3]).
//!
//! An operator counts as an instruction; a memory access is an operator that loads or stores
//! (scalar, SIMD and atomic) or a bulk memory operator. Addresses are byte offsets in the module.

use crate::cfg::{self, FuncCfg, SiteKind, Special, OPCODE_BR, OPCODE_BR_IF, OPCODE_ELSE};
use crate::events::touches_memory;
use crate::module::{validator, ModuleError, ModuleInfo};
use crate::parallel::parallel_map;
use crate::throws::Throws;
use pathprof_core::Succ;
use wasmparser::FunctionBody;

/// How a CFG edge is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeBranch {
    /// No branch: the block falls through into the next (the end of a `block`, the start of a
    /// `loop`).
    FallThrough,
    /// A two-way branch (`br_if`, `if`): `taken` when it goes to its label — `br_if`'s non-zero
    /// condition, `if`'s jump to its `else` or `end` on zero.
    Conditional { taken: bool },
    /// An unconditional branch: `br`, or the jump over the `else` arm at `else`.
    Jump,
    /// Entry `index` of a `br_table` of `targets` entries, its default the last.
    Table { index: u32, targets: u32 },
    /// Leaves the function: `return`, a branch to the body's label, its final `end`, a tail call.
    Return,
}

impl EdgeBranch {
    /// The outcome bits of the branch: 1 for a two-way branch taken and for an unconditional one,
    /// 0 for one not taken, the entry's index for a `br_table` (as many bits as its entries need).
    pub fn outcome(self) -> (u32, u8) {
        match self {
            EdgeBranch::FallThrough => (0, 0),
            EdgeBranch::Conditional { taken } => (u32::from(taken), 1),
            EdgeBranch::Jump | EdgeBranch::Return => (1, 1),
            EdgeBranch::Table { index, targets } => {
                (index, (32 - targets.saturating_sub(1).leading_zeros()).max(1) as u8)
            }
        }
    }
}

/// A call in a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The offset right after the call: where its return goes.
    pub return_to: u32,
    /// The callee of a `call`; `None` for `call_indirect` and `call_ref`.
    pub callee: Option<u32>,
}

/// Instructions and memory accesses of a stretch of code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    pub instructions: u32,
    pub memory: u32,
}

/// A block's start, calls and work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockBranches {
    pub offset: u32,
    pub calls: Vec<CallSite>,
    /// The work before the first call, between calls, and after the last: one more than the calls.
    pub work: Vec<Work>,
}

/// The branches of one function body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FuncBranches {
    /// By CFG edge: how it is taken, and the block it goes to (`None` out of the function).
    pub edges: Vec<EdgeBranch>,
    pub targets: Vec<Option<u32>>,
    /// By block.
    pub blocks: Vec<BlockBranches>,
    /// By block: whether it is a loop header.
    pub loop_headers: Vec<bool>,
    pub entry_block: u32,
}

/// The branches of `body`, whose CFG is `fcfg`.
pub fn function_branches(body: &FunctionBody, fcfg: &FuncCfg) -> Result<FuncBranches, wasmparser::BinaryReaderError> {
    let cfg = &fcfg.cfg;
    let bytes = body.as_bytes();
    let body_start = body.range().start as u64;
    let opcode = |op: usize| bytes.get(fcfg.op_offsets[op] as usize).copied().unwrap_or(0);
    let mut edges = vec![EdgeBranch::FallThrough; cfg.edges().len()];
    for site in &fcfg.sites {
        match &site.kind {
            SiteKind::Edge(e) => {
                if matches!(opcode(site.op), OPCODE_BR | OPCODE_ELSE) {
                    edges[*e as usize] = EdgeBranch::Jump;
                }
            }
            SiteKind::Cond(yes, no) => {
                // `br_if` goes to its label on non-zero; `if` falls into its arm on non-zero.
                let br_if = opcode(site.op) == OPCODE_BR_IF;
                edges[*yes as usize] = EdgeBranch::Conditional { taken: br_if };
                edges[*no as usize] = EdgeBranch::Conditional { taken: !br_if };
            }
            SiteKind::RefCond(to_label, fall) => {
                edges[*to_label as usize] = EdgeBranch::Conditional { taken: true };
                edges[*fall as usize] = EdgeBranch::Conditional { taken: false };
            }
            SiteKind::Table(targets) => {
                let n = targets.len() as u32;
                for (i, &e) in targets.iter().enumerate() {
                    edges[e as usize] = EdgeBranch::Table { index: i as u32, targets: n };
                }
            }
            SiteKind::TailCall(_) | SiteKind::Returned(_) => {}
        }
    }
    // Whatever operator takes it, an edge out of the function is a return; so is a throw, which
    // leaves the block for a handler or out of the function.
    for (e, edge) in cfg.edges().iter().enumerate() {
        if matches!(edge.to, Succ::Exit | Succ::Throw) {
            edges[e] = EdgeBranch::Return;
        }
    }
    let mut blocks: Vec<BlockBranches> = fcfg
        .blocks
        .iter()
        .map(|b| BlockBranches { offset: b.offset as u32, calls: Vec::new(), work: vec![Work::default()] })
        .collect();
    let mut specials = fcfg.specials.iter().peekable();
    fcfg.visit_ops(body, |i, op, block| {
        let special = specials.next_if(|&&(at, _)| at == i).map(|&(_, s)| s);
        let Some(block) = block.map(|b| &mut blocks[b]) else { return };
        let work = block.work.last_mut().expect("a block has work");
        work.instructions += 1;
        if touches_memory(op) {
            work.memory += 1;
        }
        if let Some(Special::Call { callee, .. }) = special {
            let return_to = (body_start + u64::from(fcfg.op_offsets[(i + 1).min(fcfg.num_ops)])) as u32;
            block.calls.push(CallSite { return_to, callee });
            block.work.push(Work::default());
        }
    })?;
    let loop_headers = fcfg.blocks.iter().map(|b| b.loop_header).collect();
    let targets = cfg
        .edges()
        .iter()
        .map(|e| match e.to {
            Succ::Block(b) => Some(b),
            Succ::Exit | Succ::Throw => None,
        })
        .collect();
    Ok(FuncBranches { edges, targets, blocks, loop_headers, entry_block: cfg.entry() })
}

/// The branches of every defined function of a module, by defined index; `None` for the functions
/// the instrumenter leaves alone. (The instrumenter gives them for the module it instruments with
/// [`SinkKind::Trace`](crate::SinkKind::Trace), from the CFGs it builds anyway.)
pub fn module_branches(bytes: &[u8]) -> Result<(ModuleInfo, Vec<Option<FuncBranches>>), ModuleError> {
    each_cfg(bytes, function_branches)
}

/// `f` of the body and CFG of every defined function of the module `bytes`, by defined index,
/// computed in parallel; `None` for a function whose body pathprof does not read into a CFG.
pub(crate) fn each_cfg<T: Send>(
    bytes: &[u8],
    f: impl Fn(&FunctionBody<'_>, &FuncCfg) -> Result<T, wasmparser::BinaryReaderError> + Sync,
) -> Result<(ModuleInfo, Vec<Option<T>>), ModuleError> {
    let (info, bodies) = ModuleInfo::read_sections(bytes)?;
    let throws = Throws::of_module(&info, &bodies).map_err(ModuleError::from_validation)?;
    let all = parallel_map(&bodies, |_, (func, body)| -> Result<_, wasmparser::BinaryReaderError> {
        Ok(match cfg::build(body, &mut validator(func), &throws)? {
            Ok(fcfg) => Some(f(body, &fcfg)?),
            Err(_) => None,
        })
    });
    let all = all.into_iter().collect::<Result<Vec<_>, _>>().map_err(ModuleError::from_validation)?;
    Ok((info, all))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branches of the last function of `wat`.
    fn branches_of(wat: &str) -> FuncBranches {
        let bytes = wat::parse_str(wat).unwrap();
        let (_, all) = module_branches(&bytes).unwrap();
        all.into_iter().last().unwrap().unwrap()
    }

    #[test]
    fn edges_by_operator() {
        let f = branches_of(
            r#"(module (memory 1) (func $g)
                (func (param i32) (result i32)
                  (block
                    (loop
                      (br_if 1 (i32.eqz (local.get 0)))
                      (call $g)
                      (local.set 0 (i32.load (i32.sub (local.get 0) (i32.const 1))))
                      (br 0)))
                  (if (local.get 0) (then (call $g)) (else (nop)))
                  (block (block (br_table 0 1 (local.get 0))))
                  (i32.const 7)))"#,
        );
        let kinds: Vec<EdgeBranch> = f.edges.clone();
        assert!(kinds.contains(&EdgeBranch::Conditional { taken: true }));
        assert!(kinds.contains(&EdgeBranch::Conditional { taken: false }));
        assert!(kinds.contains(&EdgeBranch::Jump));
        assert!(kinds.contains(&EdgeBranch::Table { index: 0, targets: 2 }));
        assert!(kinds.contains(&EdgeBranch::Table { index: 1, targets: 2 }));
        assert!(kinds.contains(&EdgeBranch::Return));
        assert_eq!(f.loop_headers.iter().filter(|&&h| h).count(), 1);
        let calls: usize = f.blocks.iter().map(|b| b.calls.len()).sum();
        assert_eq!(calls, 2);
        let memory: u32 = f.blocks.iter().flat_map(|b| &b.work).map(|w| w.memory).sum();
        assert_eq!(memory, 1);
        for b in &f.blocks {
            assert_eq!(b.work.len(), b.calls.len() + 1);
        }
    }

    #[test]
    fn table_outcome_widths() {
        assert_eq!(EdgeBranch::Table { index: 2, targets: 3 }.outcome(), (2, 2));
        assert_eq!(EdgeBranch::Table { index: 1, targets: 2 }.outcome(), (1, 1));
        assert_eq!(EdgeBranch::Table { index: 0, targets: 1 }.outcome(), (0, 1));
        assert_eq!(EdgeBranch::Table { index: 4, targets: 5 }.outcome(), (4, 3));
        assert_eq!(EdgeBranch::Conditional { taken: false }.outcome(), (0, 1));
    }
}
