// Branch hints in V8: a hinted module (`pathprof hint`) run under Node's WASI with V8's optimizing
// compiler only (`--no-liftoff`), with `--experimental-wasm-branch-hinting` and with
// `--no-experimental-wasm-branch-hinting` (V8 14, in Node 26, reads hints by default), the two
// interleaved; prints each side's median bench region (`bench.start` → `bench.end`, or the whole
// run), their ratio, and whether V8 compiled other code with the hints (`code_changed`: the
// module's TurboFan code as `--print-wasm-code` prints it, addresses left out; `null` where this
// Node prints none, or more than 512 MiB), as `pathprof bench --hints` does for Wasmtime.
//
//   node scripts/hints-v8.mjs [--runs N] [--dir DIR] HINTED.wasm [ARGS...]
//
// DIR (default: the module's folder) is pre-opened as `.`, as the corpus programs expect. The
// module's standard output is compared between the two sides: a difference is an error. Needs a
// Node whose V8 knows the flag (Node 20 does); prints a line and exits 0 where it does not.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchTimer, median, report, sameOutput, timedChild } from './v8-timing.mjs';

const FLAG = '--experimental-wasm-branch-hinting';
const NO_FLAG = '--no-experimental-wasm-branch-hinting';

async function child(module, dir, args) {
  const { WASI } = await import('node:wasi');
  const wasi = new WASI({ version: 'preview1', args: [module, ...args], env: {}, preopens: { '.': dir }, returnOnExit: true });
  const timer = benchTimer();
  const { instance } = await WebAssembly.instantiate(readFileSync(module), { wasi_snapshot_preview1: wasi.wasiImport, bench: timer.imports });
  const code = wasi.start(instance);
  report(timer.seconds(), code);
}

/** A hash of the code V8 compiles for `module` with `flag` (every function by TurboFan, when the
 * module is compiled, nothing run), or null where this Node prints no code or more than 512 MiB of it.
 * Functions are compiled in parallel and printed in any order, with absolute addresses: each
 * function's instructions are kept without addresses and hex operands, and hashed in name order. */
function codeHash(self, module, flag) {
  const flags = ['--no-liftoff', '--no-wasm-lazy-compilation', '--print-wasm-code', flag];
  const r = spawnSync(process.execPath, [...flags, self, '--compile', module], { maxBuffer: 2 ** 29 - 64, encoding: 'utf8' });
  if (r.error?.code === 'ENOBUFS') return null;
  if (r.status !== 0) throw new Error(`compiling ${module} with ${flag} failed: ${r.stderr.slice(0, 500)}`);
  const functions = [];
  let current = null;
  let inside = false;
  for (const line of r.stdout.split('\n')) {
    if (line.startsWith('--- WebAssembly code ---')) [current, inside] = [[], false];
    else if (current === null) continue;
    else if (line.startsWith('--- End code ---')) {
      functions.push(current.join('\n'));
      [current, inside] = [null, false];
    }
    else if (line.startsWith('name:') || line.startsWith('index:')) current.push(line.trim());
    else if (line.startsWith('Instructions')) inside = true;
    else if (/^(Protected|Source positions|Safepoints|RelocInfo)/.test(line)) inside = false;
    else if (inside) current.push((line.trim().split(/\s+/).slice(3).join(' ')).replace(/0x[0-9a-f]+|<\+[^>]*>/g, ''));
  }
  if (functions.length === 0) return null;
  const hash = createHash('sha256');
  for (const f of functions.sort()) hash.update(f);
  return hash.digest('hex');
}

function parent(argv) {
  let runs = 5;
  let dir = null;
  while (argv[0]?.startsWith('--')) {
    const flag = argv.shift();
    if (flag === '--runs') runs = Number(argv.shift());
    else if (flag === '--dir') dir = argv.shift();
    else throw new Error(`unknown option ${flag}`);
  }
  const [module, ...args] = argv;
  if (!module || !(runs >= 1)) throw new Error('usage: node scripts/hints-v8.mjs [--runs N] [--dir DIR] HINTED.wasm [ARGS...]');
  const v8 = spawnSync(process.execPath, ['--v8-options'], { encoding: 'utf8' });
  if (!v8.stdout.includes(FLAG)) {
    console.log(`skipped: this Node's V8 has no ${FLAG}`);
    return;
  }
  dir = resolve(dir ?? dirname(resolve(module)));
  const self = fileURLToPath(import.meta.url);
  const times = { off: [], on: [] };
  const output = sameOutput();
  for (let round = 0; round < runs; round++) {
    for (const side of ['off', 'on']) {
      const flags = ['--no-liftoff', '--no-warnings', side === 'on' ? FLAG : NO_FLAG];
      const what = `the ${side} run`;
      const { seconds, stdout } = timedChild(flags, [self, '--child', resolve(module), dir, ...args], dir, what);
      output(stdout, what);
      times[side].push(seconds);
    }
  }
  const off = median(times.off);
  const on = median(times.on);
  const [hashOff, hashOn] = [NO_FLAG, FLAG].map((flag) => codeHash(self, resolve(module), flag));
  const code_changed = hashOff === null || hashOn === null ? null : hashOff !== hashOn;
  console.log(JSON.stringify({ module, runs, off_median_seconds: off, on_median_seconds: on, ratio: on / off, code_changed }));
}

const argv = process.argv.slice(2);
if (argv[0] === '--compile') {
  new WebAssembly.Module(readFileSync(argv[1]));
} else if (argv[0] === '--child') {
  const [, module, dir, ...args] = argv;
  await child(module, dir, args);
} else {
  parent(argv);
}
