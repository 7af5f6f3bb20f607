#!/bin/bash
# Bursty k-BLPP's accuracy [KBL13 §6] on every program of a Sightglass-style corpus: each program
# run twice with --deterministic, in mode kbl:K (exact) and kbl:K:burst, then `pathprof compare`.
# One line per program: wall seconds of both runs, bursts, share of path ends streamed, hot K-path
# coverage and K-path weight matching.
#   scripts/kbl-bursts.sh CORPUS [K] [BURST FLAGS...]   (PATHPROF: the binary, default target/release/pathprof)
set -uo pipefail
corpus=${1:?usage: scripts/kbl-bursts.sh CORPUS [K] [BURST FLAGS...]}
k=${2:-8}
shift $(( $# >= 2 ? 2 : 1 ))
P=$(realpath "${PATHPROF:-target/release/pathprof}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$corpus" || exit 1
printf '%-40s %9s %9s %7s %9s %11s %9s\n' program exact_s burst_s bursts streamed coverage matching
find . -name '*.wasm' | sed 's|^\./||' | sort | while read -r w; do
    ok=1
    for m in "kbl:$k" "kbl:$k:burst"; do
        flags=()
        [ "$m" = "kbl:$k:burst" ] && flags=("$@")
        (cd "$(dirname "$w")" && timeout 900 "$P" run --quiet --deterministic --mode "$m" "${flags[@]}" --dir . \
            -o "$tmp/$m.json" "$(basename "$w")" >/dev/null 2>"$tmp/err") || { ok=0; echo "$w $m: $(head -c 200 "$tmp/err")"; }
    done
    [ $ok = 1 ] || continue
    "$P" compare "$tmp/kbl:$k.json" "$tmp/kbl:$k:burst.json" >"$tmp/cmp"
    wall() { python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["wall_seconds"])' "$1"; }
    bursts=$(grep -m1 -o '^  [0-9,]* bursts' "$tmp/cmp" | tr -d ' ,' | sed 's/bursts//')
    streamed=$(grep -m1 -o 'streamed [0-9.]*%' "$tmp/cmp" | sed 's/streamed //')
    coverage=$(grep -m1 -o 'coverage ([^)]*): [0-9.]*% ([0-9,]* of [0-9,]*' "$tmp/cmp" | sed 's/.*: //; s/ (/ /; s/ of /\//')
    matching=$(grep -m1 -o 'frequency): [0-9.]*%' "$tmp/cmp" | sed 's/.*: //')
    printf '%-40s %9s %9s %7s %9s %11s %9s\n' "$w" "$(wall "$tmp/kbl:$k.json")" "$(wall "$tmp/kbl:$k:burst.json")" \
        "$bursts" "$streamed" "$coverage" "$matching"
done
