// pathprof's JavaScript host: runs a module instrumented by `pathprof instrument` in any
// WebAssembly engine (Node, a browser), supplies the `pathprof.*` imports its mode needs, and
// writes a dump of what the run recorded, which `pathprof decode MAP DUMP -o PROFILE.json` turns
// into the profile `pathprof run` would have written from the same counts.
//
//   import { PathprofHost } from './pathprof-host.mjs';
//   const host = new PathprofHost(map);                      // the map, parsed or as text
//   const { instance } = await host.instantiate(bytes, imports);   // was WebAssembly.instantiate
//   (or host.instantiateStreaming(fetch(url), imports), for WebAssembly.instantiateStreaming)
//   ... run the program; on a trap: host.trapped(error) ...
//   const dump = await host.dump({ exitCode });              // a Uint8Array
//
// Modes: bl, ppp, events (every strategy), pep:every:N, kbl, ips and ippp. Timer sampling (`pep`, `pep:S:T`)
// needs pathprof's own host. The dump format is documented in docs/profile-format.md ("Dumps").
// No dependencies, no build step: an ES module for Node 22+ and browsers whose engine has
// multi-memory (the profiler's counters live in a memory of their own).

export const MAP_FORMAT = 'pathprof-map';
export const MAP_VERSION = 14;
export const DUMP_MAGIC = 'pathprof-dump';
export const DUMP_VERSION = 3;
/** The bit of `count_path`'s function argument that marks an ID with high keys. */
const HIGH_KEY = 2 ** 31;
/** Where the high keys of such an ID lie in the profiler's memory (`u64` words, in order). */
const HIGH_KEYS = 32;

/** Module name of the profiler's imports. */
const IMPORT_MODULE = 'pathprof';
/** The sampling flag's word in the profiler's memory (`pep`), and the number of path ends to skip. */
const SAMPLE_FLAG = 0;
/** Largest count kept as a Number; past it, the count moves to a BigInt. */
const MAX_EXACT = Number.MAX_SAFE_INTEGER;
const U64_MAX = (1n << 64n) - 1n;

/** Whether this engine validates a module with two memories (a profiler memory of its own). */
export function hasMultiMemory() {
  // (module (memory 0) (memory 0))
  const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 5, 5, 2, 0, 0, 0, 0]);
  try {
    return WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

/**
 * `imports` with every function wrapped in a JavaScript function of its own: V8 cannot yet call an
 * engine's native ("fast API") functions, such as node:wasi's, from a module with several memories.
 */
export function wrapFunctions(imports) {
  const wrapped = {};
  for (const [name, f] of Object.entries(imports)) wrapped[name] = typeof f === 'function' ? (...args) => f(...args) : f;
  return wrapped;
}

/** The functions of the wasm frames of a V8 stack trace, innermost first. */
function wasmFrames(stack) {
  const frames = [];
  for (const line of String(stack ?? '').split('\n')) {
    const m = /wasm-function\[(\d+)\]/.exec(line);
    if (m) frames.push(Number(m[1]));
  }
  return frames;
}

/** The stack of the current call, every frame of it. */
function currentStack() {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = Infinity;
  try {
    return new Error().stack;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

function asBytes(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  throw new TypeError('pathprof: instantiate takes the module\'s bytes (an ArrayBuffer or a typed array)');
}

export class PathprofHost {
  #map;
  #mode;
  #every = 0;
  #skip = 0;
  #counts = new Map();
  /** The functions whose supergraph IDs have high keys, with how many. */
  #highWords = new Map();
  #overflow = new Map();
  #chunks = [];
  #streamItems = 0;
  #memory = null;
  #sha256 = null;
  #started = 0;
  #frames = [];
  #trap = null;
  #region = null;
  #regionStart = null;

  /** A host for the module that `map` (the JSON `pathprof instrument` wrote, or its text) describes. */
  constructor(map) {
    if (typeof map === 'string') map = JSON.parse(map);
    if (map?.format !== MAP_FORMAT) throw new Error('pathprof: not a pathprof map');
    if (map.version !== MAP_VERSION) {
      throw new Error(`pathprof: a map of version ${map.version}; this host reads version ${MAP_VERSION}`);
    }
    if (!map.origin) throw new Error('pathprof: the map does not say what its module was instrumented for');
    this.#map = map;
    this.#mode = map.origin.mode;
    const sink = map.sink;
    if (sink.kind === 'sample') {
      const every = /^pep:every:(\d+)$/.exec(this.#mode);
      if (sink.buffer || !every) {
        throw new Error(`pathprof: --mode ${this.#mode} samples on a timer, which only pathprof's own host runs; instrument with pep:every:N`);
      }
      this.#every = Number(every[1]);
    }
    for (const f of map.functions ?? []) {
      const calls = f.state?.supergraph?.calls ?? [];
      const words = calls.reduce((most, c) => Math.max(most, c.word ?? 0), 0);
      if (words > 0) this.#highWords.set(f.index, words);
    }
  }

  /** The mode the module was instrumented for. */
  get mode() {
    return this.#mode;
  }

  /** `imports` with the profiler's imports added. */
  imports(imports = {}) {
    const own = {
      count_path: (fn, path) => this.#countPath(fn >>> 0, BigInt.asUintN(64, path)),
      sample_path: (fn, path) => {
        if (this.#skip > 0) {
          this.#skip -= 1;
          return;
        }
        this.#skip = this.#every - 1;
        this.#count(fn >>> 0, [], BigInt.asUintN(64, path));
      },
      flush_stream: () => this.#flush(),
    };
    return { ...imports, [IMPORT_MODULE]: own };
  }

  /**
   * `WebAssembly.instantiate(bytes, imports)` with the profiler's imports: the one line an app
   * changes. Resolves to `{ module, instance }`.
   */
  async instantiate(source, imports = {}) {
    const bytes = asBytes(source);
    if (!hasMultiMemory()) {
      throw new Error('pathprof: this engine has no multi-memory, which instrumented modules need (Node 22+, Chrome 120+, Firefox 125+)');
    }
    this.#sha256 = await sha256Hex(bytes);
    const result = await WebAssembly.instantiate(bytes, this.imports(imports));
    this.attach(result.instance);
    return result;
  }

  /**
   * `WebAssembly.instantiateStreaming(source, imports)` with the profiler's imports: `source` a
   * `Response` or a promise of one (`fetch(url)`). The module's bytes are read whole first, for
   * their digest.
   */
  async instantiateStreaming(source, imports = {}) {
    const response = await source;
    if (!response.ok) throw new Error(`pathprof: cannot fetch the module: ${response.status} ${response.statusText}`);
    return this.instantiate(await response.arrayBuffer(), imports);
  }

  /** Takes the profiler's memory of `instance` (done by `instantiate`), and starts the clock. */
  attach(instance) {
    const name = this.#map.memory_export;
    if (name) {
      this.#memory = instance.exports[name];
      if (!(this.#memory instanceof WebAssembly.Memory)) throw new Error(`pathprof: the module exports no memory ${name}`);
    }
    if (this.#every > 0) {
      new DataView(this.#memory.buffer).setInt32(SAMPLE_FLAG, 1, true);
      this.#skip = this.#every - 1;
    }
    this.#started = performance.now();
  }

  /** WASI preview 1 imports whose `proc_exit` first notes the activations still open, each wrapped
   * ([`wrapFunctions`]). */
  wasi(wasiImport) {
    const wrapped = wrapFunctions(wasiImport);
    const procExit = wasiImport.proc_exit;
    wrapped.proc_exit = (code) => {
      this.#frames = wasmFrames(currentStack());
      return procExit(code);
    };
    return wrapped;
  }

  /** The Sightglass `bench` imports, timing the region between `start` and `end`. */
  bench() {
    return {
      start: () => {
        this.#regionStart = performance.now();
      },
      end: () => {
        if (this.#regionStart !== null) this.#region = (this.#region ?? 0) + performance.now() - this.#regionStart;
        this.#regionStart = null;
      },
    };
  }

  /** The program trapped (or threw) with `error`: its message and open activations are kept. */
  trapped(error) {
    this.#trap = String(error?.message ?? error);
    this.#frames = wasmFrames(error?.stack);
  }

  /**
   * The dump of the run so far, once the program has stopped: `exitCode` and `args` as the
   * program saw them.
   */
  async dump({ exitCode = this.#trap ? 134 : 0, args = [], engine = engineName() } = {}) {
    if (this.#sha256 === null) throw new Error('pathprof: nothing ran: instantiate the module with the host first');
    const wallSeconds = (performance.now() - this.#started) / 1000;
    const memory = this.#memory ? new Uint8Array(this.#memory.buffer).slice() : new Uint8Array(0);
    const counts = [];
    for (const [key, n] of this.#counts) counts.push([key, BigInt(n) + (this.#overflow.get(key) ?? 0n)]);
    for (const [key, n] of this.#overflow) if (!this.#counts.has(key)) counts.push([key, n]);
    const header = {
      map_version: this.#map.version,
      module_sha256: this.#sha256,
      engine,
      args,
      exit_code: exitCode,
      trap: this.#trap,
      wall_seconds: wallSeconds,
      bench_region_seconds: this.#region === null ? null : this.#region / 1000,
      open_frames: this.#frames,
      memory_bytes: memory.length,
      host_counts: counts.length,
      stream_items: this.#streamItems,
    };
    const head = new TextEncoder().encode(`${DUMP_MAGIC} ${DUMP_VERSION}\n${JSON.stringify(header)}\n`);
    const records = counts.map(([key, n]) => [key, n, Number((key >> 32n) & 0xffn)]);
    const countBytes = records.reduce((sum, [, , words]) => sum + 24 + 8 * words, 0);
    const out = new Uint8Array(head.length + memory.length + countBytes + 8 * this.#streamItems);
    out.set(head, 0);
    out.set(memory, head.length);
    const view = new DataView(out.buffer);
    let at = head.length + memory.length;
    for (const [key, n, words] of records) {
      if (n > U64_MAX) throw new Error('pathprof: a path count passed 2^64 - 1');
      view.setUint32(at, Number(key & 0xffffffffn), true);
      view.setUint32(at + 4, words, true);
      for (let w = 0; w < words; w++) view.setBigUint64(at + 8 + 8 * w, (key >> BigInt(104 + 64 * w)) & U64_MAX, true);
      view.setBigUint64(at + 8 + 8 * words, (key >> 40n) & U64_MAX, true);
      view.setBigUint64(at + 16 + 8 * words, n, true);
      at += 24 + 8 * words;
    }
    for (const chunk of this.#chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }

  /**
   * A call of `count_path`: with the function's top bit set, a supergraph ID of several words (mode
   * `ippp`), whose high keys the module wrote to the profiler's memory; otherwise a path end.
   */
  #countPath(fn, path) {
    if (fn < HIGH_KEY) {
      this.#count(fn, [], path);
      return;
    }
    fn -= HIGH_KEY;
    const words = this.#highWords.get(fn);
    if (!words) throw new Error(`pathprof: count_path passed high keys for function ${fn}, whose IDs have one word`);
    if (!this.#memory) throw new Error('pathprof: high keys were passed before instantiation ended (a start function)');
    const view = new DataView(this.#memory.buffer);
    const high = [];
    for (let w = 0; w < words; w++) high.push(view.getBigUint64(HIGH_KEYS + 8 * w, true));
    this.#count(fn, high, path);
  }

  /**
   * One more path end of `(fn, high, path)` passed to the host (`high` empty: the ID has one word),
   * counted by a key that holds them all: the function in bits 0–31, the number of high keys in
   * bits 32–39, the path in bits 40–103, each high key in 64 bits past them.
   */
  #count(fn, high, path) {
    let key = BigInt(fn) | (BigInt(high.length) << 32n) | (path << 40n);
    high.forEach((h, w) => { key |= h << BigInt(104 + 64 * w); });
    const n = (this.#counts.get(key) ?? 0) + 1;
    if (n < MAX_EXACT) {
      this.#counts.set(key, n);
    } else {
      this.#overflow.set(key, (this.#overflow.get(key) ?? 0n) + BigInt(n));
      this.#counts.set(key, 0);
    }
  }

  /** The stream buffer is full: its items are kept, and it is emptied. */
  #flush() {
    if (!this.#memory) throw new Error('pathprof: the stream was flushed before instantiation ended (a start function)');
    const { index, buffer, capacity } = this.#map.sink;
    const view = new DataView(this.#memory.buffer);
    const n = Math.min(view.getUint32(index, true), capacity);
    this.#chunks.push(new Uint8Array(this.#memory.buffer, buffer, 8 * n).slice());
    this.#streamItems += n;
    view.setUint32(index, 0, true);
  }
}

function engineName() {
  if (globalThis.process?.versions?.node) return `node ${globalThis.process.versions.node} (V8 ${globalThis.process.versions.v8})`;
  return globalThis.navigator?.userAgent ?? 'unknown';
}
