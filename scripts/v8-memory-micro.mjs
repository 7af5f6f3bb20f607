// What a counter in the profiler's memory (memory 1) costs V8 against one in memory 0: a recursive
// `fib(34)` that increments an `i64` counter at every call, at the entry or after its two calls (as
// a path end at a function's exit), in a module with two memories; medians of nine rounds,
// interleaved in one process. Needs WABT's `wat2wasm` on the path; run it with the TurboFan tier
// only, as docs/PERFORMANCE.md does:
//
//   node --no-liftoff scripts/v8-memory-micro.mjs

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './v8-timing.mjs';

const count = (mem) =>
  `(i64.store ${mem} offset=64 (i32.and (local.get 0) (i32.const 8))
     (i64.add (i64.load ${mem} offset=64 (i32.and (local.get 0) (i32.const 8))) (i64.const 1)))`;
const fib = (entry, exit) => `(module (memory 1) (memory 1)
  (func $fib (export "fib") (param i32) (result i32) (local i32)
    ${entry}
    (local.set 1 (if (result i32) (i32.lt_u (local.get 0) (i32.const 2)) (then (local.get 0))
      (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))
    ${exit}
    (local.get 1)))`;
const variants = {
  'no counter': fib('', ''),
  'memory 0, entry': fib(count(0), ''),
  'memory 1, entry': fib(count(1), ''),
  'memory 0, after the calls': fib('', count(0)),
  'memory 1, after the calls': fib('', count(1)),
};

const dir = mkdtempSync(join(tmpdir(), 'v8-micro-'));
const fns = {};
try {
  for (const [name, wat] of Object.entries(variants)) {
    const [src, out] = [join(dir, 'm.wat'), join(dir, 'm.wasm')];
    writeFileSync(src, wat);
    execFileSync('wat2wasm', ['--enable-multi-memory', src, '-o', out]);
    fns[name] = (await WebAssembly.instantiate(readFileSync(out))).instance.exports.fib;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const times = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
for (const f of Object.values(fns)) f(30);
for (let round = 0; round < 9; round++) {
  for (const [name, f] of Object.entries(fns)) {
    const t = performance.now();
    f(34);
    times[name].push(performance.now() - t);
  }
}
console.log(`V8 ${process.versions.v8}`);
for (const [name, t] of Object.entries(times)) {
  const range = `${Math.min(...t).toFixed(0)}–${Math.max(...t).toFixed(0)}`;
  console.log(`${name.padEnd(28)} ${median(t).toFixed(1)} ms (${range})`);
}
