#!/usr/bin/env python3
"""tools/replay_guided_screens.py on a made-up full search: one op and dtype, tokens 1 and 8 at widths 1024,
2048 and 4096 (the anchor is 2048). At tokens = 8 the winner at width 4096, `w`, screened 1.25x the best at
its anchor and is not among the anchors' five best geometric means (it is slow at tokens = 1): a ratio of
1.3 keeps it, 1.2 leaves it out (exit 1, the shape named, and what it would cost)."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

script = os.path.join(sys.argv[1], "tools", "replay_guided_screens.py")


def row(name, median, **extra):
    return {"name": name, "median_us": median, "min_us": median, "samples": 9, **extra}


benchmarks = [{"name": "ktune/copy_ceiling", "median_us": 1.0}]
for t in (1, 8):
    for h in (1024, 2048, 4096):
        shape = f"tokens={t},h={h}"
        times = {"original": 9.0, "a": 1.0, "b": 1.1, "c": 1.2, "d": 1.21, "e": 1.22, "f": 1.23, "g": 1.24, "w": 1.5}
        if t == 1 and h == 2048:
            times["w"] = 5.0   # slow at this anchor: not among the five best geometric means
        if t == 8 and h == 2048:
            times["w"] = 1.25  # at the anchor: 1.25x a
        if t == 8 and h == 4096:
            times["w"] = 0.9   # the winner there
        for v, m in times.items():
            benchmarks.append(row(f"toy/fp16/{shape}/{v}", m))
        benchmarks.append(row(f"toy/fp16/{shape}/x", 0, error_occurred=True))  # failed everywhere: always kept

with tempfile.TemporaryDirectory() as d:
    full = os.path.join(d, "search.json.gz")
    with gzip.open(full, "wt") as f:
        json.dump({"context": {"mode": "search"}, "benchmarks": benchmarks}, f)

    def run(*ratios):
        return subprocess.run([sys.executable, script, full, *ratios], capture_output=True, text=True)

    kept = run("1.3")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "0 shapes whose winner would be left out" in kept.stdout, kept.stdout
    left = run("1.2", "1.3")
    assert left.returncode == 1, left.stdout + left.stderr
    assert "ratio 1.2:" in left.stdout and "1 shapes whose winner would be left out" in left.stdout, left.stdout
    assert "toy/fp16/tokens=8,h=4096: w, the best kept screen +11.1%" in left.stdout, left.stdout
    # 6 shapes x 10 rows. At 1.3 the guided shapes keep all but w at tokens = 1 (5x a at its anchor); at 1.2
    # they keep S, x (no passing screen at the anchor), a, b, c (1.2x) and, forced, d and e: 7 each.
    assert "ratio 1.3: 58 of 60 screens kept" in kept.stdout, kept.stdout
    assert "ratio 1.2: 48 of 60 screens kept" in left.stdout, left.stdout

    guided = os.path.join(d, "guided.json")
    with open(guided, "w") as f:
        json.dump({"context": {"guided_out": "3"}, "benchmarks": benchmarks}, f)
    refused = subprocess.run([sys.executable, script, guided], capture_output=True, text=True)
    assert refused.returncode == 2 and "a guided search" in refused.stdout, refused.stdout
print("ok")
