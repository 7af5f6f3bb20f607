// The overhead of a mode's probes in V8: every program of a Sightglass-style corpus instrumented
// with `pathprof instrument`, then run under Node's WASI, original and instrumented interleaved
// (each run a process of its own, the instrumented one with pathprof's JavaScript host); prints
// each program's median bench region (`bench.start` → `bench.end`) on both sides, their ratio, and
// the geometric mean of the ratios, as `pathprof bench` does for Wasmtime.
//
//   node scripts/overhead-v8.mjs [--runs N] [--mode MODE] [--pathprof BIN] [--json FILE] CORPUS [PROGRAM...]
//
// PROGRAM filters by a substring of the program's path. A program whose bench region lasts under
// 1 µs uninstrumented is too short to time: its row is marked `*` and the mean leaves it out, as
// `pathprof bench` does. Both sides call WASI through the same
// JavaScript wrappers (which V8 needs for a module with two memories). The programs' standard
// output must be the same on both sides. Needs a Node with multi-memory (22 or later).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchTimer, median, report, sameOutput, timedChild } from './v8-timing.mjs';

const here = dirname(fileURLToPath(import.meta.url));

async function child(side, module, map, dir) {
  const { WASI } = await import('node:wasi');
  const { PathprofHost, wrapFunctions } = await import(join(here, '../js/pathprof-host.mjs'));
  const wasi = new WASI({ version: 'preview1', args: [basename(module)], env: {}, preopens: { '.': dir }, returnOnExit: true });
  const timer = benchTimer();
  const bytes = readFileSync(module);
  let instance;
  if (side === 'instrumented') {
    const host = new PathprofHost(readFileSync(map, 'utf8'));
    const imports = { wasi_snapshot_preview1: host.wasi(wasi.wasiImport), bench: timer.imports };
    ({ instance } = await host.instantiate(bytes, imports));
  } else {
    const imports = { wasi_snapshot_preview1: wrapFunctions(wasi.wasiImport), bench: timer.imports };
    ({ instance } = await WebAssembly.instantiate(bytes, imports));
  }
  const code = wasi.start(instance);
  report(timer.seconds(), code);
}

function programs(corpus) {
  const out = [];
  for (const entry of readdirSync(corpus).sort()) {
    const folder = join(corpus, entry);
    if (!statSync(folder).isDirectory()) continue;
    for (const file of readdirSync(folder).sort()) if (file.endsWith('.wasm')) out.push(join(folder, file));
  }
  return out;
}

function once(side, module, map, dir) {
  const args = [fileURLToPath(import.meta.url), '--child', side, module, map, dir];
  return timedChild(['--no-warnings'], args, dir, `${module} (${side})`);
}

function parent(argv) {
  let runs = 5;
  let mode = 'bl';
  let pathprof = join(here, '../target/release/pathprof');
  let json = null;
  while (argv[0]?.startsWith('--')) {
    const flag = argv.shift();
    if (flag === '--runs') runs = Number(argv.shift());
    else if (flag === '--mode') mode = argv.shift();
    else if (flag === '--pathprof') pathprof = argv.shift();
    else if (flag === '--json') json = argv.shift();
    else throw new Error(`unknown option ${flag}`);
  }
  const [corpus, ...filters] = argv;
  if (!corpus || !(runs >= 1)) throw new Error('usage: node scripts/overhead-v8.mjs [--runs N] [--mode MODE] [--pathprof BIN] [--json FILE] CORPUS [PROGRAM...]');
  const tmp = mkdtempSync(join(tmpdir(), 'pathprof-v8-'));
  const rows = [];
  try {
    for (const module of programs(resolve(corpus))) {
      const name = relative(resolve(corpus), module);
      if (filters.length && !filters.some((f) => name.includes(f))) continue;
      const instrumented = join(tmp, `${rows.length}.wasm`);
      const map = `${instrumented}.map.json`;
      const inst = spawnSync(pathprof, ['instrument', '--mode', mode, '-o', instrumented, module], { encoding: 'utf8' });
      if (inst.status !== 0) throw new Error(`instrument ${name}: ${inst.stderr}`);
      const times = { original: [], instrumented: [] };
      const output = sameOutput();
      for (let round = 0; round < runs; round++) {
        for (const side of ['original', 'instrumented']) {
          const r = once(side, side === 'original' ? module : instrumented, map, dirname(module));
          output(r.stdout, `${name}: the ${side} run`);
          times[side].push(r.seconds);
        }
      }
      const original = median(times.original);
      const withProbes = median(times.instrumented);
      const timed = original >= 1e-6;
      const row = { program: name, original, instrumented: withProbes, ratio: withProbes / original, timed };
      rows.push(row);
      const mark = timed ? '' : ' * (too short to time)';
      console.log(`${name.padEnd(44)} ${original.toFixed(4).padStart(9)} s ${withProbes.toFixed(4).padStart(9)} s  x${row.ratio.toFixed(3)}${mark}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const timed = rows.filter((r) => r.timed);
  const geomean = Math.exp(timed.reduce((s, r) => s + Math.log(r.ratio), 0) / timed.length);
  console.log(`geometric mean of ${timed.length} ratios (${mode}, ${runs} runs a side, ${process.version}): x${geomean.toFixed(3)}`);
  if (json) writeFileSync(json, JSON.stringify({ mode, runs, node: process.version, rows, geomean }, null, 1));
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') await child(...argv.slice(1));
else parent(argv);
