//! Every program of ../shared/corpus made a component (the module, Wasmtime's preview-1 adapter,
//! and the Sightglass `bench` imports as an imported instance `bench`) and profiled in `bl` and `kbl`:
//! byte-identical stdout and stderr, exit status 0, balanced path counts, and the profile of the
//! program's module; each other core module with code (the adapter, its shims) profiled in its
//! turn, the output the same. Skipped, with a message, when the corpus is absent.

mod common;

use common::{check_balance, component_of, corpus_dir, profile_bytes_checked, profile_checked};
use pathprof::Inputs;

#[test]
fn corpus_components_run_instrumented_with_identical_output() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let programs = pathprof::bench::programs(&dir).unwrap();
    assert!(!programs.is_empty());
    let engine = pathprof_runtime::engine().unwrap();
    let instrumented = |p: &pathprof_core::profile::Profile| {
        p.functions.iter().filter(|f| f.is_instrumented()).map(|f| f.index).collect::<Vec<_>>()
    };
    let mut differing = Vec::new();
    let mut others = 0;
    for wasm in &programs {
        let name = wasm.strip_prefix(&dir).unwrap().display().to_string();
        let component = component_of(&std::fs::read(wasm).unwrap());
        let of_module = profile_checked(&engine, wasm, &name, "bl", &Inputs::default());
        for mode in ["bl", "kbl"] {
            let profile = profile_bytes_checked(&engine, wasm, &component, &name, mode, &Inputs::default());
            assert_eq!(profile.module.core_module, Some(0), "{name} ({mode}): the program's module");
            assert!(profile.path_executions.0 > 0, "{name} ({mode})");
            check_balance(&profile);
            if mode == "bl" {
                // Every other core module with code (the adapter, its shims), profiled in turn as
                // `--core-module all` does: the same output, and counted paths.
                let info = pathprof_wasm::component::ComponentInfo::read(&component).unwrap();
                for other in info.modules.iter().filter(|m| m.code_size > 0 && m.index != 0) {
                    let path = other.path();
                    let inputs = Inputs { core_module: Some(&path), ..Inputs::default() };
                    let p = profile_bytes_checked(&engine, wasm, &component, &name, mode, &inputs);
                    assert_eq!(p.module.core_module, Some(other.index), "{name}: core module {path}");
                    check_balance(&p);
                    others += 1;
                }
                // The run itself may differ: the adapter takes a page of the program's memory (bz2's
                // `dlmalloc` paths move), its `fd_read` returns less at a time (blake3's read loop
                // turns more often), and unseeded random numbers differ from run to run (libsodium).
                // The functions instrumented are the module's.
                assert_eq!(instrumented(&profile), instrumented(&of_module), "{name}");
                if profile.functions != of_module.functions {
                    differing.push(name.clone());
                }
            }
        }
    }
    eprintln!(
        "{} of {} components have their module's bl profile, path for path; not: {}; {others} other core modules profiled",
        programs.len() - differing.len(),
        programs.len(),
        differing.join(", ")
    );
    assert!(others >= programs.len(), "the adapter of every component is profiled");
}
