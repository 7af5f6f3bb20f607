//! Compiles a module as `pathprof run` compiles it (the runtime's engine: stop polls rather than
//! epoch checks for a core module, multi-memory, ...) and writes Wasmtime's compiled artifact, an
//! ELF file whose symbols name each function (`wasm[0]::function[N]`), for a disassembler to read:
//!
//! ```sh
//! cargo run --release -p pathprof --example machine_code -- APP.wasm APP.cwasm
//! objdump -d --no-show-raw-insn APP.cwasm | awk '/<wasm\[0\]::function\[5\]>:/,/^$/'
//! ```
//!
//! `scripts/machine-code.sh` does it for a program uninstrumented and in a mode, side by side.

use anyhow::{bail, Context, Result};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else { bail!("usage: machine_code APP.wasm OUT.cwasm") };
    let bytes = std::fs::read(input).with_context(|| format!("cannot read {input}"))?;
    let polls = !pathprof_wasm::component::is_component(&bytes);
    let engine = pathprof_runtime::engine_with(&pathprof_runtime::EngineOptions { polls, ..Default::default() })?;
    // The runtime's own compile step, which adds the polls under such an engine.
    let (program, _) = pathprof_runtime::compile(&engine, &bytes).with_context(|| format!("cannot compile {input}"))?;
    let compiled = match program {
        pathprof_runtime::Program::Module(m) => m.serialize(),
        pathprof_runtime::Program::Component(c) => c.serialize(),
    };
    let compiled = compiled.map_err(|e| anyhow::anyhow!("cannot serialize {input}: {e}"))?;
    std::fs::write(output, compiled).with_context(|| format!("cannot write {output}"))?;
    Ok(())
}
