// What the V8 timing scripts (hints-v8.mjs, overhead-v8.mjs) share: each run is a child process
// that times the Sightglass bench region and reports it on standard error, and the parent takes the
// median of each side's runs, requiring every run to exit 0 and all to print the same output.

import { spawnSync } from 'node:child_process';

const MARK = 'PATHPROF-V8 ';

/** The `bench` imports, timing the region between `start` and `end`; `seconds()` gives it (the whole
 * run from now when the program has no region). */
export function benchTimer() {
  const whole = performance.now();
  let started = null;
  let region = null;
  return {
    imports: {
      start() { started = performance.now(); },
      end() { region = (region ?? 0) + performance.now() - started; },
    },
    seconds: () => (region ?? performance.now() - whole) / 1000,
  };
}

/** In the child: reports the run's seconds and exit status to the parent. */
export function report(seconds, code) {
  process.stderr.write(`${MARK}${JSON.stringify({ seconds, code })}\n`);
}

/** In the parent: runs `node FLAGS ARGS` in `cwd` (a child that calls `report`), which must exit 0;
 * its seconds and its standard output (base64). */
export function timedChild(flags, args, cwd, what) {
  const r = spawnSync(process.execPath, [...flags, ...args], { cwd, maxBuffer: 1 << 28 });
  const line = r.stderr.toString().split('\n').find((l) => l.startsWith(MARK));
  if (!line) throw new Error(`${what} failed: ${r.stderr.toString().slice(0, 500)}`);
  const { seconds, code } = JSON.parse(line.slice(MARK.length));
  if (code !== 0) throw new Error(`${what} exited ${code}`);
  return { seconds, stdout: r.stdout.toString('base64') };
}

/** Keeps the first output seen and requires every later one to equal it. */
export function sameOutput() {
  let first = null;
  return (stdout, what) => {
    if (first === null) first = stdout;
    else if (stdout !== first) throw new Error(`${what} wrote another output`);
  };
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
