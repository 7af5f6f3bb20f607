#!/usr/bin/env bash
# Residual path profiling [PPP07 §3.5] on programs of a Sightglass-style corpus, each run once with
# a small "test" input (in mode bl) and once with its own, larger "field" input (in mode ppp, the test
# run's paths being the interesting ones); prints `pathprof report --untested` of every field run,
# the figures of [PPP07 Table 3.1]. With a third argument `ips:K`, both runs are in that mode and the
# test run's interprocedural path segments are the interesting ones: the figures of [PPP07 Table
# 3.2] (interprocedural residual path profiling, §3.5.2); with `ippp[:K]` (or `ippp[:K]:slots`), the
# test run is in `ips:K` and the field run in that mode, which also prints how many of the field
# run's path ends counted in slots. The inputs are made in a temporary folder from the programs' own.
#
#   scripts/residual.sh [CORPUS_DIR] [PATHPROF] [ips:K|ippp[:K]|ippp[:K]:slots]    (defaults: ../shared/corpus, target/release/pathprof)
set -euo pipefail
corpus=$(cd "${1:-../shared/corpus}" && pwd)
pathprof=$(cd "$(dirname "${2:-target/release/pathprof}")" && pwd)/$(basename "${2:-target/release/pathprof}")
segments=${3:-}
case "$segments" in
    "") test_mode=bl field_mode=ppp ;;
    ips|ips:[1-4]) test_mode=$segments field_mode=$segments ;;
    ippp|ippp:slots) test_mode=ips:1 field_mode=$segments ;;
    ippp:[1-4]) test_mode=ips:${segments#ippp:} field_mode=$segments ;;
    ippp:[1-4]:slots) k=${segments#ippp:} test_mode=ips:${k%:slots} field_mode=$segments ;;
    *) echo "residual.sh: the third argument is ips:K, ippp:K or ippp:K:slots (K from 1 to 4), ippp or ippp:slots, not $segments" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# prepare NAME FOLDER TEST_INPUT_COMMAND: copies FOLDER twice and makes the test copy's default.input
# with TEST_INPUT_COMMAND (run in the test copy, the original input as its standard input).
prepare() {
    local name=$1 folder=$2 make=$3
    cp -r "$corpus/$folder" "$work/$name-test"
    cp -r "$corpus/$folder" "$work/$name-field"
    chmod -R u+w "$work/$name-test" "$work/$name-field"
    (cd "$work/$name-test" && sh -c "$make" < "$corpus/$folder/default.input" > default.input.new && mv default.input.new default.input)
}

prepare blake3 blake3-scalar 'cat small.input'
prepare bz2 bz2 'head -c 4000'
prepare quicksort quicksort 'echo 10'
prepare richards richards 'echo 100'
prepare rust-json rust-json "python3 -c 'import json,sys; json.dump(json.load(sys.stdin)[:20], sys.stdout, indent=2)'"

for name in blake3 bz2 quicksort richards rust-json; do
    (cd "$work/$name-test" && "$pathprof" run --quiet --dir . --mode "$test_mode" -o test.json benchmark.wasm > /dev/null)
    (cd "$work/$name-field" && "$pathprof" run --quiet --dir . --mode "$field_mode" --interesting "$work/$name-test/test.json" \
        -o field.json benchmark.wasm > /dev/null)
    echo "== $name"
    "$pathprof" report --untested --top 5 "$work/$name-field/field.json"
    "$pathprof" report --top 0 "$work/$name-field/field.json" 2>/dev/null | grep 'supergraph paths in' || true
    "$pathprof" report --untested --json --top 0 "$work/$name-field/field.json" > "$work/$name.json"
done
