// Branch hints in V8: a hinted module (`pathprof hint`) run under Node's WASI with V8's optimizing
// compiler only (`--no-liftoff`), with and without `--experimental-wasm-branch-hinting`, the two
// interleaved; prints each side's median bench region (`bench.start` → `bench.end`, or the whole
// run) and their ratio, as `pathprof bench --hints` does for Wasmtime.
//
//   node scripts/hints-v8.mjs [--runs N] [--dir DIR] HINTED.wasm [ARGS...]
//
// DIR (default: the module's folder) is pre-opened as `.`, as the corpus programs expect. The
// module's standard output is compared between the two sides: a difference is an error. Needs a
// Node whose V8 knows the flag (Node 20 does); prints a line and exits 0 where it does not.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = 'PATHPROF-V8 ';
const FLAG = '--experimental-wasm-branch-hinting';

async function child(module, dir, args) {
  const { WASI } = await import('node:wasi');
  const wasi = new WASI({ version: 'preview1', args: [module, ...args], env: {}, preopens: { '.': dir }, returnOnExit: true });
  let started = null;
  let region = null;
  const bench = {
    start() { started = performance.now(); },
    end() { region = (region ?? 0) + performance.now() - started; },
  };
  const whole = performance.now();
  const { instance } = await WebAssembly.instantiate(readFileSync(module), { wasi_snapshot_preview1: wasi.wasiImport, bench });
  const code = wasi.start(instance);
  const seconds = (region ?? performance.now() - whole) / 1000;
  process.stderr.write(`${MARK}${JSON.stringify({ seconds, code })}\n`);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
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
  let output = null;
  for (let round = 0; round < runs; round++) {
    for (const side of ['off', 'on']) {
      const flags = ['--no-liftoff', '--no-warnings', ...(side === 'on' ? [FLAG] : [])];
      const r = spawnSync(process.execPath, [...flags, self, '--child', resolve(module), dir, ...args], {
        cwd: dir,
        maxBuffer: 1 << 28,
      });
      const line = r.stderr.toString().split('\n').find((l) => l.startsWith(MARK));
      if (!line) throw new Error(`the ${side} run failed: ${r.stderr.toString().slice(0, 500)}`);
      const { seconds, code } = JSON.parse(line.slice(MARK.length));
      if (code !== 0) throw new Error(`the ${side} run exited ${code}`);
      const out = r.stdout.toString('base64');
      if (output === null) output = out;
      else if (out !== output) throw new Error(`the ${side} run wrote another output`);
      times[side].push(seconds);
    }
  }
  const off = median(times.off);
  const on = median(times.on);
  console.log(JSON.stringify({ module, runs, off_median_seconds: off, on_median_seconds: on, ratio: on / off }));
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') {
  const [, module, dir, ...args] = argv;
  await child(module, dir, args);
} else {
  parent(argv);
}
