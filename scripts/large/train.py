# A second CPython workload for scripts/large-programs.sh, another input than workload.py for
# `bench --hints` (hints from this run, timed on workload.py): classes and method dispatch,
# generators, exceptions, string formatting and tuple-keyed dicts.
import itertools


class Shape:
    def area(self):
        raise NotImplementedError


class Rect(Shape):
    def __init__(self, w, h):
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h


class Tri(Shape):
    def __init__(self, b, h):
        self.b, self.h = b, h

    def area(self):
        return self.b * self.h // 2


def shapes(n):
    for i in range(n):
        yield Rect(i % 17, i % 23) if i % 3 else Tri(i % 29, i % 31)


print(sum(s.area() for s in shapes(60_000)))
grid = {}
for x, y in itertools.product(range(150), range(150)):
    grid[(x, y)] = (x * 31 + y * 17) % 101
print(sum(v for (x, y), v in grid.items() if x == y))
failures = 0
for i in range(40_000):
    try:
        if i % 7 == 0:
            raise ValueError(i)
        failures += int("%d" % (i % 10)) == 3
    except ValueError:
        failures -= 1
print(failures)
lines = ["{:>8}|{:<8}|{:^8}".format(i, i * i, hex(i)) for i in range(20_000)]
print(len("".join(lines)), lines[-1])
