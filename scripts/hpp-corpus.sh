#!/usr/bin/env bash
# The hardware path profiler's simulator on every program of a corpus: the 512-entry 4-way LFU
# table on each, then a sweep over sizes and ways (one more run, with 41 tables) on those whose
# first run had at most SWEEP_MAX_BRANCHES branches (default 3e8: the sweep simulates about 4 M
# branches per second); prints the per-program figures and the means, and writes the sweep's plot.
#
#   scripts/hpp-corpus.sh ../shared/corpus target/release/pathprof [OUT_DIR]
set -euo pipefail
corpus=$(cd "$1" && pwd)
pathprof=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
out=${3:-hpp-corpus}
max_branches=${SWEEP_MAX_BRANCHES:-300000000}
mkdir -p "$out/base" "$out/sweep"
out=$(cd "$out" && pwd)
find "$corpus" -name '*.wasm' | sort | while read -r wasm; do
    name=${wasm#"$corpus"/}
    file="$(echo "$name" | tr '/' '_').json"
    (cd "$(dirname "$wasm")" && "$pathprof" hpp --json "$out/base/$file" --dir . "$(basename "$wasm")" >/dev/null 2>&1) ||
        { echo "$name: failed" >&2; continue; }
    branches=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["branches"])' "$out/base/$file")
    if [ "$branches" -le "$max_branches" ]; then
        (cd "$(dirname "$wasm")" && "$pathprof" hpp --sweep --json "$out/sweep/$file" --dir . "$(basename "$wasm")" >/dev/null 2>&1) ||
            echo "$name: the sweep failed" >&2
    fi
done
python3 - "$out" <<'PY'
import json, sys, glob, os, statistics
out = sys.argv[1]
runs = {}
for f in sorted(glob.glob(os.path.join(out, 'base', '*.json'))):
    runs[os.path.basename(f)[:-5]] = json.load(open(f))
swept = {}
for f in sorted(glob.glob(os.path.join(out, 'sweep', '*.json'))):
    swept[os.path.basename(f)[:-5]] = json.load(open(f))
print(f"{'program':45} {'branches':>12} {'distinct':>8} {'complete':>9} {'dynamic':>8} {'hit %':>6} {'Mbr/s':>6}")
for name, r in runs.items():
    t = r['tables'][0]
    speed = r['branches'] / r['simulation_seconds'] / 1e6 if r['simulation_seconds'] > 0 else 0
    print(f"{name:45} {r['branches']:>12} {r['distinct_paths']:>8} {t['complete_overlap']:>9.2f} {t['dynamic_overlap']:>8.2f} {100*t['hit_rate']:>6.2f} {speed:>6.1f}")
first = [r['tables'][0] for r in runs.values()]
print(f"mean over {len(runs)} programs: complete overlap {statistics.mean(t['complete_overlap'] for t in first):.2f} %, "
      f"dynamic {statistics.mean(t['dynamic_overlap'] for t in first):.2f} %, hit rate {100*statistics.mean(t['hit_rate'] for t in first):.2f} %")
total_b = sum(r['branches'] for r in runs.values()); total_s = sum(r['simulation_seconds'] for r in runs.values())
print(f"simulation: {total_b} branches in {total_s:.1f} s of the consumer thread ({total_b/total_s/1e6:.1f} M branches/s, one table)")
print(f"swept: {len(swept)} programs; not swept (more than the sweep's bound of branches): {', '.join(sorted(set(runs) - set(swept))) or 'none'}")
sweep = {}
for r in swept.values():
    for t in r['tables'][1:]:
        sweep.setdefault((t['entries'], t['ways']), []).append((t['complete_overlap'], t['dynamic_overlap']))
ways = sorted({w for _, w in sweep})
print("sweep, mean complete overlap % (dynamic in parentheses):")
print(f"{'entries':>8} " + " ".join(f"{str(w)+'-way':>16}" for w in ways))
for e in sorted({e for e, _ in sweep}):
    cells = []
    for w in ways:
        v = sweep[(e, w)]
        cells.append(f"{statistics.mean(c for c, _ in v):6.2f} ({statistics.mean(d for _, d in v):6.2f})")
    print(f"{e:>8} " + " ".join(f"{c:>16}" for c in cells))
# The plot of the means.
W, H, L, R, T, B = 640, 400, 60, 120, 30, 50
es = sorted({e for e, _ in sweep})
x = lambda e: L + es.index(e) * (W - L - R) / (len(es) - 1)
lo = min(statistics.mean(c for c, _ in v) for v in sweep.values())
base = max(0, int(lo // 10) * 10)
y = lambda p: T + (100 - p) * (H - T - B) / (100 - base)
s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
     '<rect width="100%" height="100%" fill="white"/>',
     f'<text x="{L}" y="18">Mean complete overlap (%) over the corpus against Hot Path Table entries</text>']
for p in range(base, 101, 5):
    s.append(f'<line x1="{L}" y1="{y(p):.1f}" x2="{W-R}" y2="{y(p):.1f}" stroke="#ddd"/><text x="{L-6}" y="{y(p)+4:.1f}" text-anchor="end">{p}</text>')
for e in es:
    s.append(f'<text x="{x(e):.1f}" y="{H-B+18}" text-anchor="middle">{e}</text>')
colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
for i, w in enumerate(ways):
    pts = " ".join(f"{x(e):.1f},{y(statistics.mean(c for c, _ in sweep[(e, w)])):.1f}" for e in es)
    s.append(f'<polyline fill="none" stroke="{colours[i % 5]}" stroke-width="2" points="{pts}"/>')
    s.append(f'<line x1="{W-R+10}" y1="{T+20*i}" x2="{W-R+30}" y2="{T+20*i}" stroke="{colours[i % 5]}" stroke-width="2"/><text x="{W-R+35}" y="{T+20*i+4}">{w}-way</text>')
s.append('</svg>')
open(os.path.join(out, 'sweep.svg'), 'w').write("\n".join(s) + "\n")
print(f"plot: {os.path.join(out, 'sweep.svg')}")
PY
