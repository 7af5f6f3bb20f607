"""Tallies the compactness of the preferential numbering in `ppp` profiles [PPP07 Figs. 3.17-3.18]
and in `ippp` profiles with slots [PPP07 Fig. 3.20].

For every function with interesting paths: delta = slots / interesting paths (1 without holes), by
the number of interesting paths; and the ratio of the delta that Ball-Larus IDs would give (the span
of the interesting paths' IDs over their number) to the preferential delta. In an `ippp` profile the
paths are the interesting supergraph paths of `mode_facts.slots`, and their IDs supergraph IDs.

    python3 scripts/ppp_delta.py PROFILE.json...
"""
import json
import math
import sys

groups = [(1, 1), (2, 9), (10, 99), (100, None)]
delta_buckets = [(1.0, 1.0), (1.0, 1.1), (1.1, 1.5), (1.5, 2.0), (2.0, None)]
ratio_buckets = [(1, 1), (1, 10), (10, 100), (100, 1000), (1000, None)]


def bucket(x, lo, hi):
    if lo == hi:
        return x == lo
    return x > lo and (hi is None or x <= hi)


rows = []
for path in sys.argv[1:]:
    profile = json.load(open(path))
    if profile["mode"] == "ippp":
        slots = (profile.get("mode_facts") or {}).get("slots") or {"functions": []}
        for f in slots["functions"]:
            n = int(f["interesting"])
            rows.append((n, int(f["slots"]) / n, int(f["span"]) / n))
        continue
    for f in profile["functions"]:
        ppp = f.get("ppp")
        if not ppp or ppp["interesting"] == 0 or ppp["delta"] is None:
            continue
        ids = [int(p["id"]) for p in f["paths"] if p.get("interesting")]
        bl_delta = (max(ids) - min(ids) + 1) / len(ids) if ids else None
        rows.append((ppp["interesting"], ppp["delta"], bl_delta))

print(f"{len(rows)} functions with interesting paths")
print("delta by interesting paths per function:")
header = "  interesting paths  functions  " + "  ".join(
    "=1" if lo == hi else f"({lo},{hi or 'inf'}]" for lo, hi in delta_buckets)
print(header)
for lo, hi in groups:
    sel = [r for r in rows if r[0] >= lo and (hi is None or r[0] <= hi)]
    label = f"{lo}" if lo == hi else f"{lo}-{hi}" if hi else f">={lo}"
    counts = [sum(1 for r in sel if bucket(r[1], a, b)) for a, b in delta_buckets]
    mean = sum(r[1] for r in sel) / len(sel) if sel else float("nan")
    print(f"  {label:>17}  {len(sel):>9}  " + "  ".join(f"{c:>9}" for c in counts) + f"   mean {mean:.3f}")
print("delta of the IDs (Ball-Larus, or supergraph in ippp) over the preferential delta:")
ratios = [r[2] / r[1] for r in rows if r[2] is not None]
for lo, hi in ratio_buckets:
    n = sum(1 for x in ratios if (x == 1 if lo == hi else (x > lo and (hi is None or x <= hi))))
    print(f"  {'=1' if lo == hi else f'({lo},{hi or chr(8734)}]':>12}  {n}")
if ratios:
    print(f"  geometric mean {math.exp(sum(math.log(x) for x in ratios) / len(ratios)):.2f}, largest {max(ratios):.1f}")
