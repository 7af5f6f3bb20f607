//! How a call ended, and the comparison of the original's outcome and state with an instrumented
//! module's.

use crate::host::Side;
use crate::stats::Stats;
use wasmtime::{ExternType, Module, Ref, Trap, Val, WasmBacktrace};

/// How a call (or instantiation) ended.
pub enum Outcome {
    Values(Vec<Val>),
    Trap(Trap),
    /// An error that is not a trap (an uncaught exception, a resource limit, ...).
    Other(String),
}

/// How a call ended, and at an error the functions on the stack (innermost first, indices of the
/// module that ran).
pub fn outcome(r: wasmtime::Result<Vec<Val>>) -> (Outcome, Option<Vec<u32>>) {
    match r {
        Ok(v) => (Outcome::Values(v), None),
        Err(e) => {
            let frames =
                e.downcast_ref::<WasmBacktrace>().map(|bt| bt.frames().iter().map(|f| f.func_index()).collect());
            let o = match e.downcast_ref::<Trap>() {
                Some(t) => Outcome::Trap(*t),
                None => Outcome::Other(format!("{e:#}")),
            };
            (o, frames)
        }
    }
}

pub fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Values(v) => format!("values {v:?}"),
        Outcome::Trap(t) => format!("trap {t:?}"),
        Outcome::Other(s) => format!("error {s}"),
    }
}

/// Compares two values of the two stores: numbers bit-exactly, references by null-ness.
pub fn same_val(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::I32(x), Val::I32(y)) => x == y,
        (Val::I64(x), Val::I64(y)) => x == y,
        (Val::F32(x), Val::F32(y)) => x == y,
        (Val::F64(x), Val::F64(y)) => x == y,
        (Val::V128(x), Val::V128(y)) => x.as_u128() == y.as_u128(),
        (Val::FuncRef(x), Val::FuncRef(y)) => x.is_none() == y.is_none(),
        (Val::ExternRef(x), Val::ExternRef(y)) => x.is_none() == y.is_none(),
        (Val::AnyRef(x), Val::AnyRef(y)) => x.is_none() == y.is_none(),
        (Val::ExnRef(x), Val::ExnRef(y)) => x.is_none() == y.is_none(),
        (Val::ContRef(x), Val::ContRef(y)) => x.is_none() == y.is_none(),
        _ => false,
    }
}

pub fn same_ref(a: &Ref, b: &Ref) -> bool {
    match (a, b) {
        (Ref::Func(x), Ref::Func(y)) => x.is_none() == y.is_none(),
        (Ref::Extern(x), Ref::Extern(y)) => x.is_none() == y.is_none(),
        (Ref::Any(x), Ref::Any(y)) => x.is_none() == y.is_none(),
        (Ref::Exn(x), Ref::Exn(y)) => x.is_none() == y.is_none(),
        _ => false,
    }
}

/// Compares the program state visible through the original's exports.
pub fn compare_state(module: &Module, a: &mut Side, b: &mut Side) -> Result<(), String> {
    for export in module.exports() {
        let name = export.name();
        match export.ty() {
            ExternType::Global(_) => {
                let ga = a.instance.get_global(&mut a.store, name).unwrap();
                let gb = b
                    .instance
                    .get_global(&mut b.store, name)
                    .ok_or_else(|| format!("global {name:?} is not exported"))?;
                let (va, vb) = (ga.get(&mut a.store), gb.get(&mut b.store));
                if !same_val(&va, &vb) {
                    return Err(format!("global {name:?}: {va:?} vs {vb:?}"));
                }
            }
            ExternType::Memory(_) => {
                let ma = a.instance.get_memory(&mut a.store, name).unwrap();
                let mb = b
                    .instance
                    .get_memory(&mut b.store, name)
                    .ok_or_else(|| format!("memory {name:?} is not exported"))?;
                let (da, db) = (ma.data(&a.store), mb.data(&b.store));
                if da.len() != db.len() {
                    return Err(format!("memory {name:?}: {} vs {} bytes", da.len(), db.len()));
                }
                if da != db {
                    let at = da.iter().zip(db).position(|(x, y)| x != y).unwrap();
                    return Err(format!("memory {name:?} differs at byte {at}"));
                }
            }
            ExternType::Table(_) => {
                let ta = a.instance.get_table(&mut a.store, name).unwrap();
                let tb = b
                    .instance
                    .get_table(&mut b.store, name)
                    .ok_or_else(|| format!("table {name:?} is not exported"))?;
                let (na, nb) = (ta.size(&a.store), tb.size(&b.store));
                if na != nb {
                    return Err(format!("table {name:?}: size {na} vs {nb}"));
                }
                for i in 0..na {
                    let (ra, rb) = (ta.get(&mut a.store, i), tb.get(&mut b.store, i));
                    let same = match (&ra, &rb) {
                        (Some(x), Some(y)) => same_ref(x, y),
                        (None, None) => true,
                        _ => false,
                    };
                    if !same {
                        return Err(format!("table {name:?}[{i}]: {ra:?} vs {rb:?}"));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Compares the original's outcome `a` with an instrumented module's `b`; `Ok(true)` when their
/// stores are still comparable.
pub fn compare_outcomes(what: &str, a: &Outcome, b: &Outcome) -> Result<bool, String> {
    match (a, b) {
        (Outcome::Values(x), Outcome::Values(y)) => {
            if x.len() != y.len() || x.iter().zip(y).any(|(p, q)| !same_val(p, q)) {
                return Err(format!("{what}: results {x:?} vs {y:?}"));
            }
            Ok(true)
        }
        // Frames differ in size, so side effects up to a stack overflow may differ.
        (Outcome::Trap(x), Outcome::Trap(y)) if x == y => Ok(*x != Trap::StackOverflow),
        // An uncaught exception, say: the stores may not be comparable any more.
        (Outcome::Other(_), Outcome::Other(_)) => Ok(false),
        _ => Err(format!("{what}: original {} vs instrumented {}", describe(a), describe(b))),
    }
}

/// Counts how a call (or instantiation) of the original ended, once every instrumented module
/// ended alike.
pub fn count_outcome(o: &Outcome, stats: &mut Stats) {
    match o {
        Outcome::Values(_) => stats.results_matched += 1,
        Outcome::Trap(t) => {
            stats.traps_matched += 1;
            *stats.trap_codes.entry(format!("{t:?}")).or_default() += 1;
            stats.stack_overflows += u64::from(*t == Trap::StackOverflow);
        }
        Outcome::Other(_) => stats.other_errors += 1,
    }
}
