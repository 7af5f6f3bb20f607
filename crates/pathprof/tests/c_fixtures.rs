//! End-to-end tests on real C programs: the fixtures in `fixtures/c/` (built by `fixtures/c/build.sh`
//! with clang -O1 -g and wasi-libc; the `.wasm` files are committed, so these tests need no C
//! toolchain). Each test runs the `pathprof` binary on one fixture, checks the program's stdout and
//! exit status, and checks the path counts of the fixture's functions against numbers counted by hand
//! from the C source (the derivations are in the comments here and at the top of each `.c` file).
//!
//! Blocks are never named by their numbers. A block is found by its source line (`blocks[].line`, the
//! line of the source text given) or by the calls it makes (a `call` of a given function within the
//! block's byte range of the committed module), and the two are cross-checked where both apply.

use pathprof_core::profile::{Endpoint, FunctionProfile, PathCount, Profile};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/c")
}

/// A profiled run of one fixture.
struct Fixture {
    name: &'static str,
    source: String,
    wasm: Vec<u8>,
    profile: Profile,
}

/// Runs `pathprof run` on fixture `name`, checks its stdout against `NAME.stdout.expected` byte for
/// byte and its exit status against `expected_code`, and reads the profile.
fn run(name: &'static str, expected_code: i32) -> Fixture {
    let dir = fixtures_dir();
    let wasm_path = dir.join(format!("{name}.wasm"));
    let read = |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let wasm = read(&wasm_path);
    let source = String::from_utf8(read(&dir.join(format!("{name}.c")))).unwrap();
    let expected_stdout = read(&dir.join(format!("{name}.stdout.expected")));

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("profile.json");
    let output = Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .arg("run")
        .arg("--quiet")
        .arg("-o")
        .arg(&out)
        .arg(&wasm_path)
        .output()
        .expect("cannot start pathprof");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(expected_code), "{name}: exit status (stderr: {stderr})");
    assert!(
        output.stdout == expected_stdout,
        "{name}: stdout differs from {name}.stdout.expected\n--- got ---\n{}\n--- expected ---\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&expected_stdout)
    );
    let text = std::fs::read_to_string(&out).expect("no profile written");
    let profile = Profile::from_json(&text).expect("unreadable profile");
    assert_eq!(profile.mode.name(), "bl");
    assert_eq!(profile.exit_code, expected_code);
    assert_eq!(profile.trap, None, "{name}: the program trapped");
    let total: u64 = profile.functions.iter().flat_map(|f| f.paths()).map(|p| p.count.0).sum();
    assert_eq!(profile.path_executions.0, total, "path_executions");
    let fixture = Fixture { name, source, wasm, profile };
    fixture.check_well_formed();
    fixture
}

impl Fixture {
    /// The function called `name` (exactly one), which must be instrumented.
    fn func(&self, name: &str) -> &FunctionProfile {
        let found: Vec<&FunctionProfile> =
            self.profile.functions.iter().filter(|f| f.name.as_deref() == Some(name)).collect();
        assert_eq!(found.len(), 1, "{}: functions named {name}", self.name);
        let f = found[0];
        assert!(f.is_instrumented(), "{}: {name} not instrumented: {:?}", self.name, f.skip_reason());
        f
    }

    /// The C `main` (clang renames `int main(void)` to `__original_main`).
    fn main_func(&self) -> &FunctionProfile {
        let name = if self.has("__original_main") { "__original_main" } else { "main" };
        self.func(name)
    }

    fn has(&self, name: &str) -> bool {
        self.profile.functions.iter().any(|f| f.name.as_deref() == Some(name))
    }

    /// `NAME.c:L`, where L is the one source line that contains `text`.
    fn line_of(&self, text: &str) -> String {
        let lines: Vec<usize> =
            self.source.lines().enumerate().filter(|(_, l)| l.contains(text)).map(|(i, _)| i + 1).collect();
        assert_eq!(lines.len(), 1, "{}.c: lines containing {text:?}", self.name);
        format!("{}.c:{}", self.name, lines[0])
    }

    /// Blocks of `f` whose line is the source line containing `text` (at least one).
    fn blocks_at(&self, f: &FunctionProfile, text: &str) -> BTreeSet<u32> {
        let line = self.line_of(text);
        let set: BTreeSet<u32> =
            f.blocks.iter().filter(|b| b.line.as_deref() == Some(line.as_str())).map(|b| b.id).collect();
        assert!(!set.is_empty(), "{}: no block of {:?} at {line}", self.name, f.name);
        set
    }

    /// Blocks of `f` that contain a `call` of the function named `callee` (at least one).
    fn blocks_calling(&self, f: &FunctionProfile, callee: &str) -> BTreeSet<u32> {
        let target = self.func(callee).index as u64;
        let set: BTreeSet<u32> = f
            .blocks
            .iter()
            .filter(|b| calls_in(&self.wasm[b.offset as usize..b.end as usize]).contains(&target))
            .map(|b| b.id)
            .collect();
        assert!(!set.is_empty(), "{}: no block of {:?} calls {callee}", self.name, f.name);
        set
    }

    /// The blocks of `f` at the line of `text`, checked to be the blocks that call `callee`.
    fn call_site(&self, f: &FunctionProfile, text: &str, callee: &str) -> BTreeSet<u32> {
        let by_line = self.blocks_at(f, text);
        let by_call = self.blocks_calling(f, callee);
        assert_eq!(by_line, by_call, "{}: blocks of {:?} at {text:?} vs blocks calling {callee}", self.name, f.name);
        by_line
    }

    /// Facts that hold for every profile: paths start at the entry or at a loop header (or cut block)
    /// and end at an exit or at one; their blocks are blocks of the function; and own functions
    /// (those the `.c` file defines) have DWARF lines, all in the `.c` file.
    fn check_well_formed(&self) {
        for f in &self.profile.functions {
            let ids: BTreeSet<u32> = f.blocks.iter().map(|b| b.id).collect();
            let boundary = |b: u32| f.blocks.iter().any(|x| x.id == b && x.loop_header) || f.cut_blocks().contains(&b);
            for p in f.paths() {
                assert!(p.count.0 > 0, "{:?}: path with count 0", f.name);
                assert!(p.blocks.iter().all(|b| ids.contains(b)), "{:?}: path {:?}", f.name, p.blocks);
                match p.start {
                    Endpoint::Entry => {}
                    Endpoint::Block(b) => {
                        assert!(boundary(b), "{:?}: path starts at B{b}", f.name);
                        assert_eq!(p.blocks.first(), Some(&b), "{:?}: path from B{b}", f.name);
                    }
                    Endpoint::Exit | Endpoint::Throw => panic!("{:?}: path starts at exit", f.name),
                }
                match p.end {
                    Endpoint::Exit => {}
                    Endpoint::Block(b) => assert!(boundary(b), "{:?}: path ends at B{b}", f.name),
                    Endpoint::Entry => panic!("{:?}: path ends at entry", f.name),
                    Endpoint::Throw => panic!("{:?}: a C program throws", f.name),
                }
            }
        }
        let file = format!("{}.c:", self.name);
        let own = own_functions(&self.source);
        let mut lines = 0;
        for f in &self.profile.functions {
            let name = f.name.as_deref().unwrap_or("");
            let name = if name == "__original_main" { "main" } else { name };
            if !own.contains(name) {
                continue;
            }
            for b in &f.blocks {
                if let Some(line) = &b.line {
                    lines += 1;
                    assert!(line.starts_with(&file), "{}: block B{} of {name} has line {line}", self.name, b.id);
                }
            }
        }
        assert!(lines > 0, "{}: no DWARF lines in own functions", self.name);
    }
}

/// Names of the functions defined in a C source: lines at column 0 of the form
/// `[__attribute__((...))] TYPE NAME(PARAMS) {...`.
fn own_functions(source: &str) -> BTreeSet<String> {
    source
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '}', '#', '/']))
        .filter_map(|l| {
            let l = match l.strip_prefix("__attribute__((") {
                Some(rest) => rest[rest.find("))")? + 2..].trim_start(),
                None => l,
            };
            let (signature, _body) = l.split_once('{')?;
            if !signature.trim_end().ends_with(')') {
                return None;
            }
            let head = &signature[..signature.find('(')?];
            Some(head.trim_end().rsplit([' ', '*']).next()?.to_string())
        })
        .collect()
}

/// Function indices called by the `call` instructions (opcode 0x10, LEB128 index) in `code`. A byte
/// scan: callers must cross-check what they find (here: against DWARF lines or expected counts).
fn calls_in(code: &[u8]) -> Vec<u64> {
    let mut found = Vec::new();
    for i in 0..code.len() {
        if code[i] != 0x10 {
            continue;
        }
        let (mut value, mut shift) = (0u64, 0);
        for &byte in code[i + 1..].iter().take(5) {
            value |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                found.push(value);
                break;
            }
        }
    }
    found
}

/// Sum of the counts of the paths of `f` for which `pred` holds.
fn count(f: &FunctionProfile, pred: impl Fn(&PathCount) -> bool) -> u64 {
    f.paths().iter().filter(|p| pred(p)).map(|p| p.count.0).sum()
}

fn touches(p: &PathCount, blocks: &BTreeSet<u32>) -> bool {
    p.blocks.iter().any(|b| blocks.contains(b))
}

/// Number of paths started at the function entry (= completed activations).
fn entries(f: &FunctionProfile) -> u64 {
    count(f, |p| p.start == Endpoint::Entry)
}

/// Completed activations of a function with a single straight-line path.
fn calls(f: &FunctionProfile) -> u64 {
    assert!(
        f.paths().iter().all(|p| p.start == Endpoint::Entry && p.end == Endpoint::Exit),
        "{:?}: {:?}",
        f.name,
        f.paths()
    );
    entries(f)
}

fn loop_headers(f: &FunctionProfile) -> Vec<u32> {
    f.blocks.iter().filter(|b| b.loop_header).map(|b| b.id).collect()
}

/// Checks that every loop header of `f` starts as many paths as end there: each arrival at a header
/// ends one path and starts the next, which completes unless the program stops during it.
fn check_headers_balanced(f: &FunctionProfile) {
    for h in loop_headers(f) {
        let ended = count(f, |p| p.end == Endpoint::Block(h));
        let started = count(f, |p| p.start == Endpoint::Block(h));
        assert_eq!(ended, started, "{:?}: paths ending / starting at B{h}", f.name);
    }
}

/// The single block of `set`.
fn one(set: &BTreeSet<u32>) -> u32 {
    assert_eq!(set.len(), 1, "{set:?}");
    *set.first().unwrap()
}

#[test]
fn own_functions_are_found() {
    let src = "/* f(x) { */\n#include <unistd.h>\nstatic int depth, tally[3] = {1, 2, 3};\n\
               static void put_str(const char *s) { write(1, s, 1); }\n\
               __attribute__((noinline)) int classify(int n) {\n  if (x) {\n  }\n}\n\
               unsigned long *grid(void) {\nint main(void) {\n";
    let names: Vec<String> = own_functions(src).into_iter().collect();
    assert_eq!(names, ["classify", "grid", "main", "put_str"]);
    assert_eq!(calls_in(&[0x41, 0x00, 0x10, 0x89, 0x80, 0x80, 0x80, 0x00]), [9]);
    assert_eq!(calls_in(&[0x10, 0x03, 0x1a]), [3]);
}

/// branches.c: `classify(300)` then `classify(0)`.
#[test]
fn branches() {
    let fx = run("branches", 0);
    let f = fx.func("classify");
    check_headers_balanced(f);

    // One loop in the source, one loop header.
    let headers = loop_headers(f);
    assert_eq!(headers.len(), 1, "classify loop headers: {headers:?}");
    let header = Endpoint::Block(headers[0]);

    let then_arm = fx.call_site(f, "hit_third(i);", "hit_third");
    let else_arm = fx.call_site(f, "hit_other(i);", "hit_other");
    let cases = [
        fx.call_site(f, "case_zero();", "case_zero"),
        fx.call_site(f, "case_one();", "case_one"),
        fx.call_site(f, "case_two();", "case_two"),
        fx.call_site(f, "case_default();", "case_default"),
    ];

    // Two calls: classify(0) goes from the entry straight to the exit, classify(300) from the entry
    // into the loop.
    assert_eq!(entries(f), 2);
    assert_eq!(count(f, |p| p.start == Endpoint::Entry && p.end == Endpoint::Exit), 1);
    assert_eq!(count(f, |p| p.start == Endpoint::Entry && p.end == header), 1);
    // No arm runs on a path from the entry.
    for arm in [&then_arm, &else_arm].into_iter().chain(&cases) {
        assert_eq!(count(f, |p| p.start == Endpoint::Entry && touches(p, arm)), 0);
    }

    // One path from the header per iteration: 300, of which the last (i = 299) leaves the loop.
    assert_eq!(count(f, |p| p.start == header), 300);
    assert_eq!(count(f, |p| p.start == header && p.end == header), 299);
    assert_eq!(count(f, |p| p.start == header && p.end == Endpoint::Exit), 1);
    // i % 3 == 0 for i = 0, 3, ..., 297: 100 iterations; the other 200 take the else arm.
    assert_eq!(count(f, |p| touches(p, &then_arm)), 100);
    assert_eq!(count(f, |p| touches(p, &else_arm)), 200);
    assert_eq!(count(f, |p| touches(p, &then_arm) && touches(p, &else_arm)), 0);
    // Each case: 75 iterations. By i mod 12 (300 = 25 * 12, each residue 25 times): the multiples of
    // 3 (0, 3, 6, 9) have i % 4 = 0, 3, 2, 1, one of each, so each (then, case) pair is 25 and each
    // (else, case) pair 50.
    for (k, case) in cases.iter().enumerate() {
        assert_eq!(count(f, |p| touches(p, case)), 75, "case {k}");
        assert_eq!(count(f, |p| touches(p, case) && touches(p, &then_arm)), 25, "then, case {k}");
        assert_eq!(count(f, |p| touches(p, case) && touches(p, &else_arm)), 50, "else, case {k}");
    }
    // The exiting iteration is i = 299: else arm (299 % 3 = 2), default case (299 % 4 = 3).
    assert_eq!(count(f, |p| p.end == Endpoint::Exit && touches(p, &else_arm) && touches(p, &cases[3])), 1);

    // The callees: one straight path each, one run per call.
    assert_eq!(calls(fx.func("hit_third")), 100);
    assert_eq!(calls(fx.func("hit_other")), 200);
    for callee in ["case_zero", "case_one", "case_two", "case_default"] {
        assert_eq!(calls(fx.func(callee)), 75, "{callee}");
    }
    assert_eq!(entries(fx.main_func()), 1);
    assert_eq!(fx.profile.open_activations_at_exit, 0);
}

/// nested.c: `triangle(10)` then `triangle(4)`; row r runs the inner loop r times.
#[test]
fn nested() {
    let fx = run("nested", 0);
    let f = fx.func("triangle");
    check_headers_balanced(f);

    let visit = fx.call_site(f, "visit(r, c);", "visit");
    let row_done = fx.call_site(f, "row_done(r);", "row_done");
    // Two loops in the source, two loop headers. clang rotates both loops (a guard, then a
    // bottom-tested loop), so each header is the first block of its loop's body: the inner header
    // is the block that calls visit.
    let headers = loop_headers(f);
    assert_eq!(headers.len(), 2, "triangle loop headers: {headers:?}");
    let inner_id = one(&visit);
    assert!(headers.contains(&inner_id), "visit is not in a loop header");
    let outer_id = *headers.iter().find(|&&h| h != inner_id).unwrap();
    let (inner, outer) = (Endpoint::Block(inner_id), Endpoint::Block(outer_id));
    assert!(!row_done.contains(&inner_id) && !row_done.contains(&outer_id));

    // Two calls, both with rows > 0: from the entry into the outer loop.
    assert_eq!(entries(f), 2);
    assert_eq!(count(f, |p| p.start == Endpoint::Entry && p.end == outer), 2);

    // Outer iterations: 10 + 4 = 14; inner iterations: 45 + 6 = 51.
    assert_eq!(count(f, |p| p.start == outer), 14);
    assert_eq!(count(f, |p| p.start == inner), 51);
    assert_eq!(count(f, |p| touches(p, &visit)), 51);
    assert_eq!(count(f, |p| touches(p, &row_done)), 14);
    // Rows with r >= 1 (9 + 3 = 12) enter the inner loop; the r = 0 rows (one per call) skip it,
    // call row_done and go on to r = 1.
    assert_eq!(count(f, |p| p.start == outer && p.end == inner), 12);
    assert_eq!(count(f, |p| p.start == outer && p.end == outer), 2);
    assert_eq!(count(f, |p| p.start == outer && p.end == outer && touches(p, &row_done)), 2);
    // Each of the 12 inner-loop runs repeats its header r - 1 times (51 - 12 = 39 back edges) and
    // leaves it once: back to the outer header, except in the last row of each call (r = 9, r = 3),
    // which leaves the function.
    assert_eq!(count(f, |p| p.start == inner && p.end == inner), 39);
    assert_eq!(count(f, |p| p.start == inner && p.end == outer), 10);
    assert_eq!(count(f, |p| p.start == inner && p.end == Endpoint::Exit), 2);
    assert_eq!(count(f, |p| p.start == inner && p.end != inner && touches(p, &row_done)), 12);
    assert_eq!(count(f, |p| p.end == Endpoint::Exit), 2);

    assert_eq!(calls(fx.func("visit")), 51);
    assert_eq!(calls(fx.func("row_done")), 14);
    assert_eq!(entries(fx.main_func()), 1);
    assert_eq!(fx.profile.open_activations_at_exit, 0);
}

/// recursion.c: `fib(15)`, recursive, with a depth high-water mark.
#[test]
fn recursion() {
    let fx = run("recursion", 0);
    let f = fx.func("fib");
    // The recursion stays a recursion: no loop, every path from the entry to an exit.
    assert!(loop_headers(f).is_empty(), "fib has loops: {:?}", loop_headers(f));
    assert_eq!(calls(f), 1973);

    let raise = fx.call_site(f, "new_max_depth(depth);", "new_max_depth");
    // The block of the recursive calls is found by its calls only: its first instructions (a
    // `local.get` clang emits without a location) have line 0, and pathprof takes a block's `line`
    // from its first line-table row only, so the block's `line` is null today.
    let recurse = fx.blocks_calling(f, "fib");
    // 986 inner calls (n >= 2) and 987 leaves; max_depth is raised by 14 inner calls and 1 leaf.
    assert_eq!(count(f, |p| touches(p, &recurse)), 986);
    assert_eq!(count(f, |p| !touches(p, &recurse)), 987);
    assert_eq!(count(f, |p| touches(p, &raise)), 15);
    assert_eq!(count(f, |p| touches(p, &recurse) && touches(p, &raise)), 14);
    assert_eq!(count(f, |p| !touches(p, &recurse) && touches(p, &raise)), 1);
    assert_eq!(count(f, |p| touches(p, &recurse) && !touches(p, &raise)), 972);
    assert_eq!(count(f, |p| !touches(p, &recurse) && !touches(p, &raise)), 986);

    assert_eq!(calls(fx.func("new_max_depth")), 15);
    let main = fx.main_func();
    assert_eq!(entries(main), 1);
    assert!(!fx.blocks_calling(main, "fib").is_empty());
    assert_eq!(fx.profile.open_activations_at_exit, 0);
}

/// early_exit.c: main -> run(10) -> step(7) -> fail(3) -> exit(3).
#[test]
fn early_exit() {
    let fx = run("early_exit", 3);

    // The activations on the stack at exit: the C chain and, around it, wasi-libc's entry point and
    // its exit path (from the module's call graph: `wasm-objdump -d fixtures/c/early_exit.wasm`).
    // Only instrumented functions count.
    let chain = [
        "_start.command_export",
        "_start",
        "__original_main",
        "run",
        "step",
        "fail",
        "exit",
        "_Exit",
        "__wasi_proc_exit",
    ];
    for name in ["run", "step", "fail"] {
        fx.func(name);
    }
    fx.main_func();
    let open = chain
        .iter()
        .filter(|n| fx.profile.functions.iter().any(|f| f.name.as_deref() == Some(*n) && f.is_instrumented()))
        .count() as u64;
    assert!(open >= 4, "main, run, step and fail are all instrumented");
    assert_eq!(fx.profile.open_activations_at_exit, open);

    // step(i) returned for i = 0..6, on its straight path; step(7) never returned.
    let step = fx.func("step");
    // (Found by its call only: the block starts with line-0 code; see `recursion` above.)
    let fail_call = fx.blocks_calling(step, "fail");
    assert_eq!(calls(step), 7);
    assert_eq!(count(step, |p| touches(p, &fail_call)), 0);
    // fail, exit and main never returned.
    assert_eq!(fx.func("fail").paths().len(), 0);
    assert_eq!(fx.func("exit").paths().len(), 0);
    assert_eq!(entries(fx.main_func()), 0);

    // run: one path from the entry into its loop; the loop header is the block that calls step. The
    // header was reached 8 times (i = 0..7) but only the paths of i = 0..6 completed: the path of
    // i = 7 was cut short by exit, as was the path of every activation still open.
    let run_f = fx.func("run");
    let header_id = one(&fx.call_site(run_f, "sum += step(i);", "step"));
    assert!(loop_headers(run_f).contains(&header_id));
    let header = Endpoint::Block(header_id);
    assert_eq!(entries(run_f), 1);
    assert_eq!(count(run_f, |p| p.start == Endpoint::Entry && p.end == header), 1);
    assert_eq!(count(run_f, |p| p.end == header), 8);
    assert_eq!(count(run_f, |p| p.start == header), 7);
    assert_eq!(count(run_f, |p| p.end == Endpoint::Exit), 0);
    // Any other header (put_num's digit loop, inlined) is balanced: 7 one-digit numbers.
    for h in loop_headers(run_f) {
        if h != header_id {
            let h = Endpoint::Block(h);
            assert_eq!(count(run_f, |p| p.end == h), count(run_f, |p| p.start == h));
            assert_eq!(count(run_f, |p| p.start == h), 7);
        }
    }
}
