#!/usr/bin/env node
// Runs a WASI program instrumented by `pathprof instrument` under Node (node:wasi) with pathprof's
// JavaScript host, and writes the dump that `pathprof decode` turns into a profile.
//
//   node js/pathprof-node.mjs MAP INSTRUMENTED.wasm -o DUMP [--dir HOST[::GUEST]]... [--env NAME=VALUE]... [-- ARGS...]
//
// As with `pathprof run`, the program sees only the directories and variables given. Its exit
// status is this script's; a trap exits 134, with the dump written all the same.

import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { PathprofHost, hasMultiMemory } from './pathprof-host.mjs';

function usage(message) {
  process.stderr.write(`pathprof-node: error: ${message}\n`);
  process.stderr.write('usage: node pathprof-node.mjs MAP INSTRUMENTED.wasm -o DUMP [--dir HOST[::GUEST]]... [--env NAME=VALUE]... [-- ARGS...]\n');
  process.exit(2);
}

function parse(argv) {
  const options = { positional: [], dirs: {}, env: {}, args: [], output: null };
  while (argv.length > 0) {
    const a = argv.shift();
    if (a === '--') {
      options.args = argv.splice(0);
    } else if (a === '-o' || a === '--output') {
      options.output = argv.shift() ?? usage(`${a} needs a file`);
    } else if (a === '--dir') {
      const d = argv.shift() ?? usage('--dir needs a directory');
      const [host, guest = host] = d.split('::');
      if (!host || !guest) usage(`--dir ${d}: expected HOST or HOST::GUEST`);
      options.dirs[guest] = host;
    } else if (a === '--env') {
      const e = argv.shift() ?? usage('--env needs NAME=VALUE');
      const at = e.indexOf('=');
      if (at <= 0) usage(`--env ${e}: expected NAME=VALUE`);
      options.env[e.slice(0, at)] = e.slice(at + 1);
    } else if (a.startsWith('-')) {
      usage(`unknown option ${a}`);
    } else {
      options.positional.push(a);
    }
  }
  if (options.positional.length !== 2) usage('expected a map and an instrumented module');
  if (!options.output) usage('-o DUMP is required');
  return options;
}

/**
 * `wasiImport` with an `fd_write` that writes one buffer a call, the first non-empty one, as
 * Wasmtime's WASI does (a short write, which POSIX allows): a program's libc then takes the same
 * paths through its write loop here as under `pathprof run`.
 */
function oneBufferWrites(wasiImport, memory) {
  const fdWrite = wasiImport.fd_write;
  return {
    ...wasiImport,
    fd_write: (fd, iovs, count, written) => {
      const view = new DataView(memory().buffer);
      let first = 0;
      while (first < count - 1 && view.getUint32(iovs + 8 * first + 4, true) === 0) first += 1;
      return fdWrite(fd, iovs + 8 * first, Math.min(count, 1), written);
    },
  };
}

async function main() {
  const options = parse(process.argv.slice(2));
  const [mapPath, modulePath] = options.positional;
  if (!hasMultiMemory()) {
    process.stderr.write(`pathprof-node: error: this Node (${process.version}) has no WebAssembly multi-memory; use Node 22 or later\n`);
    process.exit(1);
  }
  const { WASI } = await import('node:wasi');
  const host = new PathprofHost(readFileSync(mapPath, 'utf8'));
  const args = [modulePath, ...options.args];
  const wasi = new WASI({ version: 'preview1', args, env: options.env, preopens: options.dirs, returnOnExit: true });
  let instance = null;
  const wasiImport = oneBufferWrites(wasi.wasiImport, () => instance.exports.memory);
  const imports = { wasi_snapshot_preview1: host.wasi(wasiImport), bench: host.bench() };
  ({ instance } = await host.instantiate(readFileSync(modulePath), imports));
  let exitCode;
  try {
    exitCode = wasi.start(instance);
  } catch (error) {
    host.trapped(error);
    process.stderr.write(`pathprof-node: the program trapped: ${error.message}\n`);
    exitCode = 134;
  }
  const dump = await host.dump({ exitCode, args });
  const temporary = `${options.output}.${process.pid}.tmp`;
  writeFileSync(temporary, dump);
  renameSync(temporary, options.output);
  process.exitCode = exitCode;
}

main().catch((error) => {
  process.stderr.write(`pathprof-node: error: ${error.message}\n`);
  process.exit(1);
});
