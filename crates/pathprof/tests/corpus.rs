//! Every program of ../shared/corpus runs in every mode — uninstrumented, `bl`, `pep`, `pep:dup` and `kbl`,
//! through the library's API — with byte-identical stdout and stderr, exits as it should, and
//! produces balanced path counts. Skipped, with a message, when the corpus is absent.

mod common;

use common::{check_balance, corpus_dir, profile_checked};
use pathprof::Inputs;

#[test]
fn corpus_runs_instrumented_with_identical_output() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let programs = pathprof::bench::programs(&dir).unwrap();
    assert!(!programs.is_empty());
    let engine = pathprof_runtime::engine().unwrap();
    eprintln!(
        "{:<42} {:>6} {:>5} {:>8} {:>15} {:>10}",
        "program", "instr", "skip", "paths", "executions", "instr s/MB"
    );
    for wasm in &programs {
        let name = wasm.strip_prefix(&dir).unwrap().display().to_string();
        let none = profile_checked(&engine, wasm, &name, "none", &Inputs::default());
        assert!(none.functions.is_empty() && none.path_executions.0 == 0);
        let p = profile_checked(&engine, wasm, &name, "bl", &Inputs::default());
        // Sampled mode, driven by the timer: the program's behaviour is the same.
        // With whole-function copies too: every function switches between two copies of itself.
        for mode in ["pep", "pep:dup"] {
            let sampled = profile_checked(&engine, wasm, &name, mode, &Inputs::default());
            let taken = sampled.mode.sampling().expect("pep profiles say how they sampled").samples_taken;
            assert_eq!(taken, sampled.path_executions.0);
        }
        // Multi-iteration paths: the same behaviour, and a k-IPF whose first level is the path profile.
        let kbl = profile_checked(&engine, wasm, &name, "kbl", &Inputs::default());
        assert_eq!(kbl.mode.kbl().expect("kbl profiles say how the forests were built").dropped.0, 0);
        for f in kbl.functions.iter().filter(|f| f.is_instrumented()) {
            let roots: u64 = f.kipf().expect("kbl profiles carry a k-IPF").roots.iter().map(|r| r.count.0).sum();
            assert_eq!(roots, f.paths().iter().map(|p| p.count.0).sum::<u64>(), "{name}: {:?}", f.name);
        }
        check_balance(&p);
        assert_eq!(p.open_activations_at_exit, 0);
        assert!(p.bench_region_seconds.is_some(), "{name}: bench.start/bench.end were called");
        let instrumented = p.functions.iter().filter(|f| f.is_instrumented()).count();
        let skipped = p.functions.len() - instrumented;
        let distinct: usize = p.functions.iter().map(|f| f.paths().len()).sum();
        assert!(p.path_executions.0 > 0);
        let mb = p.module.code_section_size as f64 / 1e6;
        eprintln!(
            "{:<42} {:>6} {:>5} {:>8} {:>15} {:>10.3}",
            name,
            instrumented,
            skipped,
            distinct,
            p.path_executions.0,
            p.instrumentation_seconds.unwrap() / mb
        );
    }
}
