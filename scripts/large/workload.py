# A CPython workload for scripts/large-programs.sh: the interpreter loop, dicts, strings, regular
# expressions, JSON and sorting, with output that depends on every part.
import collections
import json
import re


def primes(n):
    sieve = bytearray([1]) * (n + 1)
    sieve[0:2] = b"\0\0"
    for i in range(2, int(n**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
    return [i for i, v in enumerate(sieve) if v]


def words(text):
    return collections.Counter(w.lower() for w in re.findall(r"[A-Za-z]+", text))


class Node:
    def __init__(self, key, left=None, right=None):
        self.key, self.left, self.right = key, left, right


def insert(root, key):
    if root is None:
        return Node(key)
    if key < root.key:
        root.left = insert(root.left, key)
    else:
        root.right = insert(root.right, key)
    return root


def depth(root):
    return 0 if root is None else 1 + max(depth(root.left), depth(root.right))


ps = primes(200_000)
print(len(ps), ps[-1], sum(ps) % 1_000_003)
text = " ".join(f"alpha{i % 97} beta gamma{i % 13} Delta" for i in range(20_000))
common = words(text).most_common(5)
print(common)
records = [{"id": i, "name": f"item-{i}", "tags": [t for t in ("x", "y", "z") if i % (ord(t) - 118)]} for i in range(5_000)]
blob = json.dumps(records, sort_keys=True)
back = json.loads(blob)
print(len(blob), sum(len(r["tags"]) for r in back))
root = None
x = 12345
for _ in range(20_000):
    x = (x * 1103515245 + 12345) % 2**31
    root = insert(root, x)
print(depth(root))
print(sorted(set("%x" % (i * i) for i in range(3_000)), key=lambda s: (len(s), s))[-3:])
