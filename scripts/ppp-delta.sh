#!/usr/bin/env bash
# The compactness of preferential numbering on a Sightglass-style corpus [PPP07 Figs. 3.17-3.18]:
# every program runs once in mode bl and once in mode ppp with the bl run's paths as the interesting
# ones; every function's delta (slots over interesting paths) and the delta that Ball-Larus IDs would
# give (their span over the interesting paths) are tallied by scripts/ppp_delta.py. With `ippp`, the
# same for supergraph paths [PPP07 Fig. 3.20]: each program runs in ips:1, then in ippp:slots with
# that run's segments as the interesting ones, and the delta of the supergraph IDs is the span's;
# with `ippp:K`, segments of up to K calls (ips:K, then ippp:K:slots).
#
#   scripts/ppp-delta.sh [CORPUS_DIR] [PATHPROF] [ippp[:K]]    (defaults: ../shared/corpus, target/release/pathprof)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=$(cd "${1:-../shared/corpus}" && pwd)
pathprof=$(cd "$(dirname "${2:-target/release/pathprof}")" && pwd)/$(basename "${2:-target/release/pathprof}")
case "${3:-}" in
    "") test_mode=bl mode=ppp ;;
    ippp) test_mode=ips:1 mode=ippp:slots ;;
    ippp:[1-4]) test_mode=ips:${3#ippp:} mode=$3:slots ;;
    *) echo "ppp-delta.sh: the third argument is ippp, ippp:K (K from 1 to 4) or nothing, not $3" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
profiles=()
for wasm in $(cd "$corpus" && find . -name '*.wasm' | sort); do
    name=$(echo "${wasm#./}" | tr '/' '_')
    dir=$(dirname "$corpus/$wasm")
    (cd "$dir" && "$pathprof" run --quiet --dir . --mode "$test_mode" -o "$work/$name.test.json" "$(basename "$wasm")" > /dev/null 2>&1)
    (cd "$dir" && "$pathprof" run --quiet --dir . --mode "$mode" --interesting "$work/$name.test.json" \
        -o "$work/$name.json" "$(basename "$wasm")" > /dev/null 2>&1)
    profiles+=("$work/$name.json")
    if [ "$mode" != ppp ]; then
        "$pathprof" report --top 0 "$work/$name.json" 2>/dev/null | grep 'supergraph paths in' | sed "s|^ *|${wasm#./}: |"
    fi
done
python3 "$here/ppp_delta.py" "${profiles[@]}"
