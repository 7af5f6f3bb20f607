//! Which calls may throw an exception (the exception-handling proposal's `throw` and `throw_ref`).
//!
//! A call that may throw ends its block and leaves the path through it by an edge of its own, and a
//! function with such a call catches what leaves it to count its path (see [`cfg`](crate::cfg)):
//! both cost, so they are kept to the calls that may throw. In a module without a tag, nothing
//! does. Otherwise a function may throw when it throws itself (`throw`, `throw_ref`), makes an
//! indirect call (`call_indirect`, `call_ref`: any function of the right type may be called), or
//! calls a function that may throw — the least fixed point over the direct call graph. An imported
//! function may throw unless it is the host's: WASI (`wasi_snapshot_preview1`, `wasi_unstable`) and
//! the benchmark markers (`bench`) never throw into the program.

use crate::module::{Bodies, ModuleInfo};
use crate::parallel::parallel_map;
use wasmparser::{BinaryReaderError, Operator};

/// Import modules whose functions never throw into the program.
const HOST_MODULES: [&str; 3] = ["wasi_snapshot_preview1", "wasi_unstable", "bench"];

/// Which functions of a module may throw.
#[derive(Clone, Debug, Default)]
pub struct Throws {
    /// By function index (imports first); empty when the module has no tag.
    may: Vec<bool>,
}

impl Throws {
    /// Nothing throws.
    pub fn none() -> Throws {
        Throws::default()
    }

    /// The functions of the module that `info` and `bodies` describe that may throw.
    pub fn of_module(info: &ModuleInfo, bodies: &Bodies<'_>) -> Result<Throws, BinaryReaderError> {
        if info.num_tags == 0 {
            return Ok(Throws::none());
        }
        let imports = info.import_modules.iter().map(|m| !HOST_MODULES.contains(&m.as_str()));
        // By defined function: whether it throws or calls indirectly, and its direct callees.
        let facts = parallel_map(bodies, |_, (_, body)| -> Result<(bool, Vec<u32>), BinaryReaderError> {
            let mut reader = body.get_operators_reader()?;
            let (mut throws, mut callees) = (false, Vec::new());
            while !reader.eof() {
                match reader.read()? {
                    Operator::Throw { .. }
                    | Operator::ThrowRef
                    | Operator::Rethrow { .. }
                    | Operator::CallIndirect { .. }
                    | Operator::CallRef { .. } => throws = true,
                    Operator::Call { function_index } => callees.push(function_index),
                    _ => {}
                }
            }
            callees.sort_unstable();
            callees.dedup();
            Ok((throws, callees))
        });
        let facts = facts.into_iter().collect::<Result<Vec<_>, _>>()?;
        let mut may: Vec<bool> = imports.chain(facts.iter().map(|f| f.0)).collect();
        // Callers of every function, then a worklist from the functions known to throw.
        let first = info.num_imported_funcs as usize;
        let mut callers: Vec<Vec<u32>> = vec![Vec::new(); may.len()];
        for (k, (_, callees)) in facts.iter().enumerate() {
            for &c in callees {
                callers[c as usize].push((first + k) as u32);
            }
        }
        let mut work: Vec<u32> = (0..may.len() as u32).filter(|&f| may[f as usize]).collect();
        while let Some(f) = work.pop() {
            for &caller in &callers[f as usize] {
                if !may[caller as usize] {
                    may[caller as usize] = true;
                    work.push(caller);
                }
            }
        }
        Ok(Throws { may })
    }

    /// Whether a call of `callee` (`None` for an indirect call) may throw.
    pub fn call(&self, callee: Option<u32>) -> bool {
        match callee {
            _ if self.may.is_empty() => false,
            None => true,
            Some(f) => self.may.get(f as usize).copied().unwrap_or(true),
        }
    }

    /// Whether function `index` may throw.
    pub fn function(&self, index: u32) -> bool {
        self.may.get(index as usize).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::ModuleInfo;

    fn throws(wat: &str) -> (ModuleInfo, Throws) {
        let bytes = wat::parse_str(wat).unwrap();
        let (info, bodies) = ModuleInfo::read_sections(&bytes).unwrap();
        let throws = Throws::of_module(&info, &bodies).unwrap();
        (info, throws)
    }

    #[test]
    fn throwing_is_found_through_direct_calls_only_as_far_as_it_goes() {
        let (_, t) = throws(
            r#"(module
              (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
              (import "env" "other" (func $other))
              (tag $e)
              (type $v (func))
              (table 1 funcref)
              (func $thrower (throw $e))
              (func $calls_thrower (call $thrower))
              (func $calls_that (call $calls_thrower))
              (func $leaf (nop))
              (func $calls_leaf_and_wasi (call $leaf) (call $exit (i32.const 0)))
              (func $indirect (call_indirect (type $v) (i32.const 0)))
              (func $calls_other (call $other))
              (func $recursive (call $recursive)))"#,
        );
        let may: Vec<bool> = (0..12).map(|f| t.function(f)).collect();
        assert_eq!(may, [false, true, true, true, true, false, false, true, true, false, false, false][..]);
        assert!(t.call(None));
        assert!(!t.call(Some(5)) && t.call(Some(4)));
    }

    #[test]
    fn without_a_tag_nothing_throws() {
        let (_, t) = throws(
            r#"(module
              (import "env" "other" (func $other))
              (type $v (func))
              (table 1 funcref)
              (func (call $other) (call_indirect (type $v) (i32.const 0))))"#,
        );
        assert!(!t.call(None) && !t.call(Some(0)) && !t.function(1));
    }
}
