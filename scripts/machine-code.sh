#!/bin/bash
# The machine code Wasmtime compiles for one function of a program, uninstrumented and instrumented
# in a mode, one after the other (Intel syntax), as `pathprof run` compiles them (the runtime's
# engine settings). Functions are found by name, so the program needs a name section.
#   scripts/machine-code.sh APP.wasm FUNCTION [MODE]    (MODE defaults to bl; PATHPROF: the binary,
#                                                       default target/release/pathprof)
set -euo pipefail
app=${1:?usage: scripts/machine-code.sh APP.wasm FUNCTION [MODE]}
function=${2:?usage: scripts/machine-code.sh APP.wasm FUNCTION [MODE]}
mode=${3:-bl}
root=$(cd "$(dirname "$0")/.." && pwd)
P=$(realpath "${PATHPROF:-$root/target/release/pathprof}")
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p pathprof --example machine_code
M=$root/target/release/examples/machine_code
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$P" instrument "$app" -o "$tmp/instrumented.wasm" --mode "$mode" >/dev/null
for which in original instrumented; do
    wasm=$app
    [ "$which" = instrumented ] && wasm=$tmp/instrumented.wasm
    "$M" "$wasm" "$tmp/$which.cwasm"
    echo "== $which"
    objdump -d --no-show-raw-insn -M intel "$tmp/$which.cwasm" | awk -v f="::$function>:" 'index($0, f) { on = 1 } on && /^$/ { on = 0 } on'
done
