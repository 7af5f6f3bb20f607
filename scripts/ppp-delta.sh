#!/usr/bin/env bash
# The compactness of preferential numbering on a Sightglass-style corpus [PPP07 Figs. 3.17-3.18]:
# every program runs once in mode bl and once in mode ppp with the bl run's paths as the interesting
# ones; every function's delta (slots over interesting paths) and the delta that Ball-Larus IDs would
# give (their span over the interesting paths) are tallied by scripts/ppp_delta.py.
#
#   scripts/ppp-delta.sh [CORPUS_DIR] [PATHPROF]    (defaults: ../shared/corpus, target/release/pathprof)
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
    (cd "$dir" && "$pathprof" run --quiet --dir . -o "$work/$name.bl.json" "$(basename "$wasm")" > /dev/null 2>&1)
    (cd "$dir" && "$pathprof" run --quiet --dir . --mode ppp --interesting "$work/$name.bl.json" \
        -o "$work/$name.ppp.json" "$(basename "$wasm")" > /dev/null 2>&1)
    profiles+=("$work/$name.ppp.json")
done
python3 "$here/ppp_delta.py" "${profiles[@]}"
