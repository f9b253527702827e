"""Two consoles' py-spy profiles side by side: inclusive ms a second per function, and the
difference, largest first (what the first console pays that the second does not).

    py-spy record [--gil] -r 100 -f raw -d 120 --pid PID1 -o a.txt   (and PID2 -> b.txt, at once)
    python bench/spy_diff.py a.txt b.txt --seconds 120 [--rate 100] [--top 60]

``-f raw`` writes one line per distinct stack, ``frame;frame;... COUNT`` (py-spy's collapsed
format, outermost frame first, each frame ``function (file:line)``). A function counts once per
sample however often it is on the stack (inclusive time); frames are keyed by function and file
name (not line), so a function's samples from different lines add up. A sample is 1/rate of a
second of the process on CPU (``--gil``: of the thread holding the GIL): COUNT / rate / seconds
is its share, shown as ms a second. ``--reverse`` lists what the second pays that the first does not.
"""
from __future__ import annotations

import argparse
import collections
import re
import sys

FRAME = re.compile(r"(.*) \((.*?):\d+\)$")


def inclusive_ms(path: str, seconds: float, rate: float) -> tuple[dict[str, float], float]:
    """Each function's inclusive ms a second, and the whole profile's."""
    samples: collections.Counter[str] = collections.Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            if not count.isdigit():
                continue
            n = int(count)
            total += n
            seen = set()
            for frame in stack.split(";"):
                m = FRAME.match(frame)
                key = f"{m.group(1)} ({m.group(2).rsplit('/', 1)[-1]})" if m else frame
                if key not in seen:
                    seen.add(key)
                    samples[key] += n
    ms = 1000.0 / rate / seconds
    return {k: v * ms for k, v in samples.items()}, total * ms


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--seconds", type=float, required=True, help="the profiles' duration (py-spy -d)")
    ap.add_argument("--rate", type=float, default=100.0, help="samples a second (py-spy -r)")
    ap.add_argument("--top", type=int, default=60)
    ap.add_argument("--reverse", action="store_true")
    args = ap.parse_args()
    try:
        a, ta = inclusive_ms(args.first, args.seconds, args.rate)
        b, tb = inclusive_ms(args.second, args.seconds, args.rate)
    except OSError as e:
        print(f"spy_diff: {e}", file=sys.stderr)
        return 2
    if args.reverse:
        a, b, ta, tb = b, a, tb, ta
    print(f"sampled ms a second: {ta:.1f} against {tb:.1f}\n")
    print("| first | second | difference | function |\n|---:|---:|---:|---|")
    for key in sorted(set(a) | set(b), key=lambda k: b.get(k, 0.0) - a.get(k, 0.0))[:args.top]:
        print(f"| {a.get(key, 0.0):.2f} | {b.get(key, 0.0):.2f} | {a.get(key, 0.0) - b.get(key, 0.0):+.2f} | `{key}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
