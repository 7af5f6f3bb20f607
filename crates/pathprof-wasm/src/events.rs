//! Events: predicates over wasm operators, counted per basic block [EVT23 §3.1, §4.1].
//!
//! An event class gives every operator a weight — 1 for an occurrence, or the bytes an access
//! moves — and a block's event vector sums its operators' weights, class by class. A path's vector
//! is the sum of its blocks', and a function's totals are every path's count times its vector
//! [EVT23 §4.2]: the profile carries the block vectors so that any of these can be computed again.
//!
//! Operators are named as in the text format, compared without their dots and underscores
//! (`i32.load8_u`, `i32_load8_u` and `I32Load8U` are one name). The built-in classes
//! ([`Builtin::ALL`], documented in docs/profile-format.md) come first, then `alloc` (calls of the
//! functions named by `--alloc-fn`), then the user's events (`--event NAME=op1,op2`).

use crate::cfg::FuncCfg;
use std::collections::HashMap;
use wasmparser::{BinaryReaderError, FunctionBody, Operator};

macro_rules! define_names {
    ($( @$proposal:ident $op:ident $({ $($arg:ident: $argty:ty),* })? => $visit:ident ($($ann:tt)*))*) => {
        /// The operator's name, as `visit_i32_load8_u`.
        fn visit_name(op: &Operator) -> &'static str {
            match op {
                $( Operator::$op { .. } => stringify!($visit), )*
                _ => "visit_unknown",
            }
        }

        /// Every operator's name, as `visit_i32_load8_u`.
        const VISIT_NAMES: &[&str] = &[$(stringify!($visit)),*];
    };
}
wasmparser::for_each_operator!(define_names);

/// The operator's name in the text format's spelling with underscores: `i32_load8_u`.
pub fn operator_name(op: &Operator) -> &'static str {
    let name = visit_name(op);
    name.strip_prefix("visit_").unwrap_or(name)
}

/// Whether an operator reads or writes linear memory: a load or store (scalar, SIMD, atomic, an
/// atomic read-modify-write) or a bulk memory operator.
pub fn touches_memory(op: &Operator) -> bool {
    let name = operator_name(op);
    let bulk = name.starts_with("memory_") && !matches!(op, Operator::MemorySize { .. } | Operator::MemoryGrow { .. });
    name.contains("load") || name.contains("store") || name.contains("rmw") || bulk
}

/// A name as operator names are compared: lowercase, without dots and underscores.
fn normal(name: &str) -> String {
    name.chars().filter(|c| *c != '.' && *c != '_').flat_map(char::to_lowercase).collect()
}

/// The built-in event classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// Every memory load: scalar, SIMD (lane, splat and zero-extending loads included) and atomic.
    Load,
    /// Every memory store: scalar, SIMD lane stores and atomic stores.
    Store,
    /// `call`, `return_call`.
    Call,
    /// `call_indirect`, `return_call_indirect`, `call_ref`, `return_call_ref`.
    CallIndirect,
    /// `memory.grow`.
    MemoryGrow,
    /// `br_table`.
    BrTable,
    /// Integer division and remainder, which may trap: `i32/i64.div_s/u`, `rem_s/u`.
    Div,
    /// Scalar floating point: every `f32.*`/`f64.*` operator but loads, stores and constants, and
    /// the conversions from or to floats (`i32.trunc_f32_s`, `i64.reinterpret_f64`, …).
    Float,
    /// Every SIMD operator (`v128.*`, `i8x16.*`, `i16x8.*`, `i32x4.*`, `i64x2.*`, `f32x4.*`, `f64x2.*`).
    Simd,
    /// Every atomic operator: atomic loads, stores, read-modify-writes, `memory.atomic.*` and
    /// `atomic.fence`.
    Atomic,
    /// Bulk memory and table operators: `memory.copy/fill/init`, `data.drop`, `table.get/set/size/
    /// grow/fill/copy/init`, `elem.drop`.
    Bulk,
    /// Allocations of garbage-collected objects: `struct.new`, `struct.new_default`, `array.new`,
    /// `array.new_default`, `array.new_fixed`, `array.new_data`, `array.new_elem`.
    GcNew,
    /// Accesses to garbage-collected objects: every other `struct.*` and `array.*` operator
    /// (`struct.get*`, `struct.set`, `array.get*`, `array.set`, `array.len`, `array.fill`,
    /// `array.copy`, `array.init_*`, and their atomic forms).
    GcAccess,
    /// Every operator.
    Instr,
    /// Bytes read by loads (the access width: 1 for `i32.load8_u`, 16 for `v128.load`).
    BytesLoaded,
    /// Bytes written by stores.
    BytesStored,
}

impl Builtin {
    pub const ALL: [Builtin; 16] = [
        Builtin::Load,
        Builtin::Store,
        Builtin::Call,
        Builtin::CallIndirect,
        Builtin::MemoryGrow,
        Builtin::BrTable,
        Builtin::Div,
        Builtin::Float,
        Builtin::Simd,
        Builtin::Atomic,
        Builtin::Bulk,
        Builtin::GcNew,
        Builtin::GcAccess,
        Builtin::Instr,
        Builtin::BytesLoaded,
        Builtin::BytesStored,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Load => "load",
            Builtin::Store => "store",
            Builtin::Call => "call",
            Builtin::CallIndirect => "call_indirect",
            Builtin::MemoryGrow => "memory_grow",
            Builtin::BrTable => "br_table",
            Builtin::Div => "div",
            Builtin::Float => "float",
            Builtin::Simd => "simd",
            Builtin::Atomic => "atomic",
            Builtin::Bulk => "bulk",
            Builtin::GcNew => "gc_new",
            Builtin::GcAccess => "gc_access",
            Builtin::Instr => "instr",
            Builtin::BytesLoaded => "bytes_loaded",
            Builtin::BytesStored => "bytes_stored",
        }
    }

    /// The weight of an operator named `name` (as [`operator_name`]).
    fn weight(self, name: &str) -> u64 {
        let simd =
            ["v128_", "i8x16_", "i16x8_", "i32x4_", "i64x2_", "f32x4_", "f64x2_"].iter().any(|p| name.starts_with(p));
        let load = name.contains("_load");
        let store = name.contains("_store");
        let hit = match self {
            Builtin::Load => load,
            Builtin::Store => store,
            Builtin::Call => matches!(name, "call" | "return_call"),
            Builtin::CallIndirect => {
                matches!(name, "call_indirect" | "return_call_indirect" | "call_ref" | "return_call_ref")
            }
            Builtin::MemoryGrow => name == "memory_grow",
            Builtin::BrTable => name == "br_table",
            Builtin::Div => {
                (name.starts_with("i32_") || name.starts_with("i64_"))
                    && (name.contains("_div_") || name.contains("_rem_"))
            }
            Builtin::Float => {
                let scalar = name.starts_with("f32_") || name.starts_with("f64_");
                let conversion = name.contains("_f32") || name.contains("_f64");
                !simd && (scalar || conversion) && !load && !store && !name.ends_with("_const")
            }
            Builtin::Simd => simd,
            Builtin::Atomic => name.contains("atomic"),
            Builtin::Bulk => matches!(
                name,
                "memory_copy"
                    | "memory_fill"
                    | "memory_init"
                    | "data_drop"
                    | "table_get"
                    | "table_set"
                    | "table_size"
                    | "table_grow"
                    | "table_fill"
                    | "table_copy"
                    | "table_init"
                    | "elem_drop"
            ),
            Builtin::GcNew => name.starts_with("struct_new") || name.starts_with("array_new"),
            Builtin::GcAccess => {
                let gc = name.starts_with("struct_") || name.starts_with("array_");
                gc && !name.starts_with("struct_new") && !name.starts_with("array_new")
            }
            Builtin::Instr => true,
            Builtin::BytesLoaded => return if load { access_bytes(name, "_load") } else { 0 },
            Builtin::BytesStored => return if store { access_bytes(name, "_store") } else { 0 },
        };
        u64::from(hit)
    }
}

/// The bytes an access named `name` moves, `what` being `_load` or `_store`: the width after it
/// (`load8`: 1, `load16x4`: 8, `load32_zero`: 4) or the type's (`i64.load`: 8, `v128.store`: 16).
fn access_bytes(name: &str, what: &str) -> u64 {
    let rest = &name[name.find(what).map_or(name.len(), |i| i + what.len())..];
    let digits = |s: &str| -> Option<(u64, usize)> {
        let n: String = s.chars().take_while(char::is_ascii_digit).collect();
        Some((n.parse().ok()?, n.len()))
    };
    if let Some((bits, len)) = digits(rest) {
        return match rest[len..].strip_prefix('x').and_then(digits) {
            Some((lanes, _)) => bits * lanes / 8,
            None => bits / 8,
        };
    }
    match &name[..name.find('_').unwrap_or(0)] {
        "i32" | "f32" => 4,
        "i64" | "f64" => 8,
        "v128" => 16,
        _ => 0,
    }
}

/// What one event counts.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Builtin(Builtin),
    /// Calls of these functions (`--alloc-fn`).
    Alloc(Vec<u32>),
    /// Occurrences of these operators (normal names).
    User(Vec<String>),
}

/// Most events one run counts: a function's events are a 64-bit mask of their indices.
pub const MAX_EVENTS: usize = 64;

/// The events a user asks for: built-in classes (all of them without a list), the functions whose
/// calls are `alloc`, and events of their own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventSpec {
    /// Built-in classes and `alloc`, by name (`--events`); every built-in class when `None`.
    pub list: Option<Vec<String>>,
    /// Functions whose calls `alloc` counts, by name (`--alloc-fn`): with any, `alloc` is counted
    /// besides the default classes.
    pub alloc_fns: Vec<String>,
    /// Events of the user's: a name and the operators it counts (`--event NAME=op1,op2`).
    pub user: Vec<(String, Vec<String>)>,
}

impl EventSpec {
    /// Reads `--event NAME=op1,op2`.
    pub fn parse_user(spec: &str) -> Result<(String, Vec<String>), EventError> {
        let (name, ops) = spec
            .split_once('=')
            .ok_or_else(|| EventError(format!("--event {spec}: expected NAME=OPERATOR,OPERATOR,...")))?;
        let ops: Vec<String> = ops.split(',').map(|o| o.trim().to_string()).filter(|o| !o.is_empty()).collect();
        if name.trim().is_empty() || ops.is_empty() {
            return Err(EventError(format!("--event {spec}: expected NAME=OPERATOR,OPERATOR,...")));
        }
        Ok((name.trim().to_string(), ops))
    }
}

/// The events a run counts, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSet {
    names: Vec<String>,
    kinds: Vec<Kind>,
    /// The weights of every operator (by [`operator_name`]) under every event but `alloc`, whose
    /// weight depends on the callee.
    weights: HashMap<&'static str, Vec<u64>>,
}

/// A bad event specification.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EventError(pub String);

impl EventSet {
    /// The events of `spec` in a module whose functions are named `names` (by index).
    pub fn new(spec: &EventSpec, names: &HashMap<u32, String>) -> Result<EventSet, EventError> {
        let (list, alloc_fns, user) = (spec.list.as_deref(), spec.alloc_fns.as_slice(), spec.user.as_slice());
        let mut set = EventSet { names: Vec::new(), kinds: Vec::new(), weights: HashMap::new() };
        let alloc = || -> Result<Kind, EventError> {
            let mut fns = Vec::new();
            for f in alloc_fns {
                let before = fns.len();
                fns.extend(names.iter().filter(|(_, n)| *n == f).map(|(&i, _)| i));
                if fns.len() == before {
                    return Err(EventError(format!("--alloc-fn {f}: no function of that name")));
                }
            }
            Ok(Kind::Alloc(fns))
        };
        match list {
            None => {
                for b in Builtin::ALL {
                    set.push(b.name(), Kind::Builtin(b))?;
                }
                if !alloc_fns.is_empty() {
                    set.push("alloc", alloc()?)?;
                }
            }
            Some(list) => {
                for name in list {
                    match Builtin::ALL.iter().find(|b| b.name() == name) {
                        Some(&b) => set.push(name, Kind::Builtin(b))?,
                        None if name == "alloc" => set.push(name, alloc()?)?,
                        None => {
                            let known: Vec<&str> = Builtin::ALL.iter().map(|b| b.name()).collect();
                            return Err(EventError(format!(
                                "unknown event {name:?} (built-in events: {}, alloc)",
                                known.join(", ")
                            )));
                        }
                    }
                }
            }
        }
        if list.is_some_and(|l| l.iter().any(|n| n == "alloc")) && alloc_fns.is_empty() {
            return Err(EventError("event alloc needs --alloc-fn NAME".into()));
        }
        for (name, ops) in user {
            let mut normals = Vec::new();
            for op in ops {
                let n = normal(op);
                if !VISIT_NAMES.iter().any(|v| normal(v.strip_prefix("visit_").unwrap_or(v)) == n) {
                    return Err(EventError(format!("--event {name}: no operator {op:?}")));
                }
                normals.push(n);
            }
            set.push(name, Kind::User(normals))?;
        }
        for visit in VISIT_NAMES {
            let name = visit.strip_prefix("visit_").unwrap_or(visit);
            let weights = set
                .kinds
                .iter()
                .map(|kind| match kind {
                    Kind::Builtin(b) => b.weight(name),
                    Kind::Alloc(_) => 0,
                    Kind::User(ops) => u64::from(ops.iter().any(|o| *o == normal(name))),
                })
                .collect();
            set.weights.insert(name, weights);
        }
        Ok(set)
    }

    fn push(&mut self, name: &str, kind: Kind) -> Result<(), EventError> {
        if self.names.len() == MAX_EVENTS {
            return Err(EventError(format!("at most {MAX_EVENTS} events are counted at once")));
        }
        if name.is_empty() || self.names.iter().any(|n| n == name) {
            return Err(EventError(format!("event {name:?} is given twice or has no name")));
        }
        self.names.push(name.to_string());
        self.kinds.push(kind);
        Ok(())
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Adds the weights of `op` to `vector` (one entry per event).
    fn add(&self, op: &Operator, vector: &mut [u64]) {
        if let Some(weights) = self.weights.get(operator_name(op)) {
            for (v, w) in vector.iter_mut().zip(weights) {
                *v += w;
            }
        }
        if let Operator::Call { function_index } | Operator::ReturnCall { function_index } = op {
            for (v, kind) in vector.iter_mut().zip(&self.kinds) {
                if let Kind::Alloc(fns) = kind {
                    *v += u64::from(fns.contains(function_index));
                }
            }
        }
    }

    /// The events of the function `body`: every block's vector, and the stretches that direct
    /// counting adds at once (see [`BodyEvents`]). The operators of unreachable code, which belong to
    /// no block, count nowhere.
    pub fn body_events(&self, body: &FunctionBody, fcfg: &FuncCfg) -> Result<BodyEvents, BinaryReaderError> {
        let width = self.len();
        let mut blocks = vec![vec![0u64; width]; fcfg.blocks.len()];
        let mut entry = vec![0u64; width];
        let mut stretches: Vec<(usize, Vec<u64>)> = Vec::new();
        let mut starts = fcfg.block_starts.iter().peekable();
        fcfg.visit_ops(body, |i, op, block| {
            let mut started = None;
            while let Some(&(_, b)) = starts.next_if(|&&(op, _)| op == i) {
                started = Some(b as usize);
            }
            // A `loop` is the first operator of its header, which starts (for the probes) after it:
            // it runs with the header, once per iteration, in the stretch that starts there.
            if started.is_some() && started == block {
                stretches.push((i, vec![0u64; width]));
            }
            if let Some(b) = block {
                self.add(op, &mut blocks[b]);
                let stretch = stretches.last_mut().map_or(&mut entry, |(_, v)| v);
                self.add(op, stretch);
            }
            let call = matches!(op, Operator::Call { .. } | Operator::CallIndirect { .. } | Operator::CallRef { .. });
            if (started.is_some() && started != block) || (call && block.is_some()) {
                stretches.push((i, vec![0u64; width]));
            }
        })?;
        stretches.retain(|(_, v)| v.iter().any(|&x| x > 0));
        Ok(BodyEvents { blocks, entry, stretches })
    }
}

/// The events of one function body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BodyEvents {
    /// Every block's event vector.
    pub blocks: Vec<Vec<u64>>,
    /// The stretches of direct counting [EVT23 §3.2, `dec`]: straight-line code that runs whole once
    /// it starts, from the function's entry (`entry`), or from right after operator `i` (`(i,
    /// vector)`: a block starts there, or a call returned there), to the next such point. A call
    /// ends a stretch because it may not return — a `proc_exit` deep in it ends the program — so the
    /// events after it are added only once it has. Stretches without events are left out.
    pub entry: Vec<u64>,
    pub stretches: Vec<(usize, Vec<u64>)>,
}

impl BodyEvents {
    /// The events that occur in the function, as a mask of their indices: the columns of its
    /// counters and tables.
    pub fn mask(&self) -> u64 {
        let mut mask = 0u64;
        for v in &self.blocks {
            for (j, &x) in v.iter().enumerate() {
                if x > 0 {
                    mask |= 1 << j;
                }
            }
        }
        mask
    }
}

/// A function's events as the instrumenter counts them: where they occur, which occur at all
/// (`mask`), and for path decoding [EVT23 §4.2] every path's vector (a row per path ID, a column per
/// event of `mask`) when its paths are few enough for a table.
pub(crate) struct FunctionEvents {
    pub body: BodyEvents,
    pub mask: u64,
    pub rows: Option<Vec<u64>>,
}

/// The entries of `vector` that `mask` selects, in order.
pub fn columns(vector: &[u64], mask: u64) -> impl Iterator<Item = u64> + '_ {
    vector.iter().enumerate().filter(move |(j, _)| mask >> j & 1 == 1).map(|(_, &x)| x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_names_and_widths() {
        assert_eq!(operator_name(&Operator::I32Add), "i32_add");
        assert_eq!(normal("i64.extend_i32_u"), normal("I64ExtendI32U"));
        let bytes = |n| access_bytes(n, "_load");
        assert_eq!(
            [
                bytes("i32_load"),
                bytes("i64_load8_u"),
                bytes("v128_load"),
                bytes("v128_load16x4_s"),
                bytes("v128_load32_zero")
            ],
            [4, 1, 16, 8, 4]
        );
        assert_eq!([bytes("i64_atomic_load32_u"), bytes("f64_load"), bytes("v128_load8_lane")], [4, 8, 1]);
        assert_eq!(access_bytes("i64_store16", "_store"), 2);
        for (name, class) in [
            ("i32_load8_u", Builtin::Load),
            ("v128_store64_lane", Builtin::Store),
            ("return_call_indirect", Builtin::CallIndirect),
            ("i64_rem_u", Builtin::Div),
            ("i32_trunc_sat_f64_u", Builtin::Float),
            ("f64_sqrt", Builtin::Float),
            ("i16x8_add", Builtin::Simd),
            ("i32_atomic_rmw_add", Builtin::Atomic),
            ("table_grow", Builtin::Bulk),
            ("array_new_fixed", Builtin::GcNew),
            ("struct_new_default", Builtin::GcNew),
            ("struct_get_s", Builtin::GcAccess),
            ("array_len", Builtin::GcAccess),
        ] {
            assert_eq!(class.weight(name), 1, "{name} is a {class:?}");
        }
        for (name, class) in [
            ("f32_const", Builtin::Float),
            ("f32x4_add", Builtin::Float),
            ("i32_div", Builtin::Load),
            ("array_new", Builtin::GcAccess),
            ("ref_i31", Builtin::GcNew),
        ] {
            assert_eq!(class.weight(name), 0, "{name} is not a {class:?}");
        }
    }
}
