//! Generated cases: the random source, wasm-smith's configuration, the instrumentation options of a
//! case, and what the original module's bodies contain.

use crate::EXCEPTIONS_EVERY;
use arbitrary::Unstructured;
use pathprof_wasm::InstrumentOptions;
use wasm_smith::{InstructionKind, InstructionKinds};
use wasmparser::{Operator, Parser, Payload};

/// xorshift64* seeded through splitmix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng(z | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

pub fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v} is not a number")))
}

/// Which instructions a case may use. Restricting the kinds makes control flow (blocks, loops,
/// `br_table`) much more frequent: wasm-smith picks uniformly among the valid instructions.
pub fn instruction_kinds(flavor: u64) -> InstructionKinds {
    use InstructionKind::*;
    match flavor {
        0 => InstructionKinds::all(),
        1 => InstructionKinds::new(&[Control, Variable, Parametric]),
        2 => InstructionKinds::new(&[Control, Variable, Parametric, NumericInt]),
        3 => InstructionKinds::new(&[Control, Variable, Parametric, NumericInt, MemoryInt]),
        _ => InstructionKinds::new(&[Control, Variable, Parametric, NumericInt, Memory, Table, Reference, VectorInt]),
    }
}

/// Host functions that a few cases may import (the linker defines them, deterministically), to
/// exercise the index shift of defined functions behind the instrumenter's own import.
pub const HOST_IMPORTS: &str = r#"(module
    (import "env" "f_i32" (func (param i32) (result i32)))
    (import "env" "f_void" (func))
    (import "env" "f_multi" (func (param i64 f64) (result i32 i64))))"#;

pub fn smith_config(rng: &mut Rng, exceptions: bool, imports: bool) -> wasm_smith::Config {
    let mut c = wasm_smith::Config {
        max_imports: if imports { 3 } else { 0 },
        min_imports: 0,
        available_imports: imports.then(|| wat::parse_str(HOST_IMPORTS).unwrap()),
        export_everything: true,
        allow_start_export: true,
        multi_value_enabled: true,
        bulk_memory_enabled: true,
        reference_types_enabled: true,
        simd_enabled: true,
        relaxed_simd_enabled: true,
        tail_call_enabled: true,
        saturating_float_to_int_enabled: true,
        sign_extension_ops_enabled: true,
        extended_const_enabled: true,
        memory64_enabled: true,
        exceptions_enabled: exceptions,
        gc_enabled: false,
        custom_descriptors_enabled: false,
        custom_page_sizes_enabled: false,
        threads_enabled: false,
        shared_everything_threads_enabled: false,
        wide_arithmetic_enabled: false,
        allow_invalid_funcs: false,
        max_memories: 3,
        max_tables: 3,
        memory_max_size_required: true,
        max_memory32_bytes: 4 << 16,
        max_memory64_bytes: 4 << 16,
        table_max_size_required: true,
        max_table_elements: 200,
        min_types: 2,
        min_funcs: 2 + rng.below(5) as usize,
        max_funcs: 10,
        min_globals: rng.below(3) as usize,
        min_memories: rng.below(2) as u32,
        max_types: 16,
        max_globals: 8,
        max_tags: 4,
        max_data_segments: 8,
        max_element_segments: 8,
        max_elements: 16,
        max_instructions: 50 + rng.below(350) as usize,
        max_nesting_depth: 8,
        ..wasm_smith::Config::default()
    };
    let flavor = rng.below(5);
    c.allowed_instructions = instruction_kinds(flavor);
    c.disallow_traps = rng.below(4) == 0;
    // Garbage-collected types, and with them the typed-reference branches, in some of the cases
    // with every kind of instruction.
    c.gc_enabled = matches!(flavor, 0 | 1 | 4) && rng.below(2) == 0;
    c
}

/// Instrumentation options of a case: mostly the defaults; sometimes hash counters for nearly every
/// function, a small path limit that forces cut blocks, or back-edge loop cutting (which the wasm
/// instrumenter must replace by header cutting).
pub fn instrument_options(rng: &mut Rng) -> (InstrumentOptions, &'static str) {
    let mut o = InstrumentOptions::default();
    match rng.below(10) {
        0 | 1 => {
            o.array_max_paths = rng.below(3);
            (o, "hash")
        }
        2 | 3 => {
            o.plan.max_paths = 8 + rng.below(56);
            (o, "cuts")
        }
        4 => {
            // The wasm instrumenter counts paths at headers; it must not follow this option.
            o.plan.loop_cut = pathprof_core::dag::LoopCut::BackEdges;
            (o, "back-edges")
        }
        _ => (o, "default"),
    }
}

/// What the original module's bodies contain, by defined function.
#[derive(Default)]
pub struct BodyFacts {
    pub loops: usize,
    pub br_tables: usize,
    /// Typed-reference branches (`br_on_null`, `br_on_non_null`, `br_on_cast`, `br_on_cast_fail`).
    pub ref_branches: usize,
    /// Uses an operator the instrumenter does not support (legacy exceptions, custom descriptors'
    /// branches, stack switching).
    pub unsupported: bool,
}

pub fn body_facts(bytes: &[u8]) -> Vec<BodyFacts> {
    let mut out = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(Payload::CodeSectionEntry(body)) = payload else {
            continue;
        };
        let mut facts = BodyFacts::default();
        let mut reader = body.get_operators_reader().expect("valid body");
        while !reader.eof() {
            match reader.read().expect("valid operator") {
                Operator::Loop { .. } => facts.loops += 1,
                Operator::BrTable { .. } => facts.br_tables += 1,
                Operator::BrOnNull { .. }
                | Operator::BrOnNonNull { .. }
                | Operator::BrOnCast { .. }
                | Operator::BrOnCastFail { .. } => facts.ref_branches += 1,
                Operator::Try { .. }
                | Operator::Catch { .. }
                | Operator::CatchAll
                | Operator::Delegate { .. }
                | Operator::Rethrow { .. }
                | Operator::BrOnCastDescEq { .. }
                | Operator::BrOnCastDescEqFail { .. } => facts.unsupported = true,
                _ => {}
            }
        }
        out.push(facts);
    }
    out
}

/// The module of case `case`, and the random source that goes on to choose its options and
/// arguments.
pub fn generate(case: u64, base_seed: u64) -> Result<(Vec<u8>, Rng, bool), String> {
    let mut rng = Rng::new(base_seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let exceptions = case % EXCEPTIONS_EVERY == EXCEPTIONS_EVERY - 1;
    // The default configuration has no imports; every tenth case may import host functions.
    let imports = case % 10 == 5;
    let config = smith_config(&mut rng, exceptions, imports);
    let mut data = vec![0u8; 1024 + rng.below(15 * 1024) as usize];
    rng.fill(&mut data);
    let mut u = Unstructured::new(&data);
    let module = wasm_smith::Module::new(config, &mut u).map_err(|e| format!("wasm-smith failed: {e}"))?;
    Ok((module.to_bytes(), rng, exceptions))
}
