//! Every program of ../shared/corpus runs instrumented with byte-identical stdout and stderr, exits
//! as it should, and produces balanced path counts. Skipped, with a message, when the corpus is absent.

mod common;

use common::{check_balance, corpus_dir, expected, run_in};
use std::path::{Path, PathBuf};

fn programs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(programs(&p));
        } else if p.extension().is_some_and(|e| e == "wasm") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn corpus_runs_instrumented_with_identical_output() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let programs = programs(&dir);
    assert!(!programs.is_empty());
    eprintln!(
        "{:<42} {:>6} {:>5} {:>8} {:>15} {:>10}",
        "program", "instr", "skip", "paths", "executions", "instr s/MB"
    );
    for wasm in &programs {
        let cwd = wasm.parent().unwrap();
        let name = wasm.strip_prefix(&dir).unwrap().display().to_string();
        let check_output = |run: &common::Run, mode: &str| {
            let status = run.output.status.code();
            assert_eq!(status, Some(0), "{name} ({mode}): {}", String::from_utf8_lossy(&run.output.stderr));
            for (stream, got) in [("stdout", &run.output.stdout), ("stderr", &run.output.stderr)] {
                if let Some(file) = expected(wasm, stream) {
                    let want = std::fs::read(&file).unwrap();
                    assert!(*got == want, "{name} ({mode}): {stream} differs from {}", file.display());
                }
            }
        };
        let run = run_in(cwd, &["--dir", "."], wasm, &[]);
        check_output(&run, "bl");
        // Sampled mode, driven by the timer: the program's behaviour is the same.
        let sampled = run_in(cwd, &["--dir", ".", "--mode", "pep"], wasm, &[]);
        check_output(&sampled, "pep");
        let taken = sampled.profile.sampling.as_ref().expect("pep profiles say how they sampled").samples_taken;
        assert_eq!(taken, sampled.profile.path_executions.0);
        // Multi-iteration paths: the same behaviour, and a k-IPF whose first level is the path profile.
        let kbl = run_in(cwd, &["--dir", ".", "--mode", "kbl", "-k", "4"], wasm, &[]);
        check_output(&kbl, "kbl");
        assert_eq!(kbl.profile.kbl.as_ref().expect("kbl profiles say how the forests were built").dropped.0, 0);
        for f in kbl.profile.functions.iter().filter(|f| f.instrumented) {
            let roots: u64 = f.kipf.as_ref().expect("kbl profiles carry a k-IPF").roots.iter().map(|r| r.count.0).sum();
            assert_eq!(roots, f.paths.iter().map(|p| p.count.0).sum::<u64>(), "{name}: {:?}", f.name);
        }
        let p = &run.profile;
        check_balance(p);
        assert_eq!(p.open_activations_at_exit, 0);
        assert!(p.bench_region_seconds.is_some(), "{name}: bench.start/bench.end were called");
        let instrumented = p.functions.iter().filter(|f| f.instrumented).count();
        let skipped = p.functions.len() - instrumented;
        let distinct: usize = p.functions.iter().map(|f| f.paths.len()).sum();
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
