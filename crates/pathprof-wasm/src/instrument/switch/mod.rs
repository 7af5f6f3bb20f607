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
//!
//! * this module — the switches' types, and the resumed functions;
//! * [`plan`] — where a function's copies switch;
//! * [`emit`] — the code of the switches, and the plain copy.

mod emit;
mod plan;

pub(crate) use plan::plan;

use crate::module::ModuleInfo;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{Instruction, ValType};
use wasmparser::{BinaryReaderError, FunctionBody};
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
