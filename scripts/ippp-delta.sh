#!/usr/bin/env bash
# The compactness of the preferential numbering of supergraph paths on a Sightglass-style corpus
# [PPP07 Fig. 3.20]: every program runs once in mode ips:1 and once in mode ippp:slots with that
# run's segments as the interesting ones; every function's delta (slots over interesting supergraph
# paths) and the delta that supergraph IDs would give (their span over their number) are tallied by
# scripts/ppp_delta.py.
#
#   scripts/ippp-delta.sh [CORPUS_DIR] [PATHPROF]    (defaults: ../shared/corpus, target/release/pathprof)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=$(cd "${1:-../shared/corpus}" && pwd)
pathprof=$(cd "$(dirname "${2:-target/release/pathprof}")" && pwd)/$(basename "${2:-target/release/pathprof}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
profiles=()
for wasm in $(cd "$corpus" && find . -name '*.wasm' | sort); do
    name=$(echo "${wasm#./}" | tr '/' '_')
    dir=$(dirname "$corpus/$wasm")
    (cd "$dir" && "$pathprof" run --quiet --dir . --mode ips:1 -o "$work/$name.ips.json" "$(basename "$wasm")" > /dev/null 2>&1)
    (cd "$dir" && "$pathprof" run --quiet --dir . --mode ippp:slots --interesting "$work/$name.ips.json" \
        -o "$work/$name.ippp.json" "$(basename "$wasm")" > /dev/null 2>&1)
    profiles+=("$work/$name.ippp.json")
    "$pathprof" report --top 0 "$work/$name.ippp.json" 2>/dev/null | grep 'supergraph paths in' | sed "s|^ *|${wasm#./}: |"
done
python3 "$here/ppp_delta.py" "${profiles[@]}"
