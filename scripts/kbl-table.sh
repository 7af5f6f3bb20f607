#!/bin/bash
# The k-BLPP evaluation table's raw lines: every program of a Sightglass-style corpus at k = 2, 4, 8
# and 16, each line the program, k, the k-SF line and the "whole program" row of `pathprof report`.
#   scripts/kbl-table.sh CORPUS [JOBS]      (PATHPROF: the binary, default target/release/pathprof)
set -uo pipefail
corpus=${1:?usage: scripts/kbl-table.sh CORPUS [JOBS]}
jobs=${2:-1}
P=$(realpath "${PATHPROF:-target/release/pathprof}")
one() { # program k
    local w=$1 k=$2 tmp rc
    tmp=$(mktemp -d)
    (cd "$(dirname "$w")" && timeout 600 "$P" run --quiet --no-cache --mode "kbl:$k" --fold-threads 2 --dir . \
        -o "$tmp/p.json" "$(basename "$w")" >/dev/null 2>"$tmp/err")
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "$w k=$k rc=$rc $(head -c 200 "$tmp/err")"
    else
        "$P" report "$tmp/p.json" --top 1 >"$tmp/report"
        echo "$w k=$k | $(grep -m1 'k-SF:' "$tmp/report") | $(grep -m1 'whole program' "$tmp/report")"
    fi
    rm -rf "$tmp"
}
export -f one
export P
cd "$corpus" || exit 1
find . -name '*.wasm' | sed 's|^\./||' | sort | while read -r w; do
    for k in 2 4 8 16; do echo "$w $k"; done
done | xargs -P "$jobs" -n 2 bash -c 'one "$0" "$1"'
