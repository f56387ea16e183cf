#!/usr/bin/env python3
"""Replays the guided screens' rule (bench/search.hpp, screen_guides and guided_in) on a full search.

A full search screened every variant at every shape (`ktune_bench --screen-every-shape`, or any search
before 2026-11-27). For each guide ratio, this prints how many (variant, shape) screens the rule would
have kept, and the shapes whose winner (the fastest in the rounds, else by screen) it would have left
out, with what that would have cost: the best kept screen against the winner's. Exit status 1 when a
winner falls outside at the first ratio given.

    tools/replay_guided_screens.py reports/nvidia-h200/raw/search.json.gz 1.3 1.2 1.15

The rule, per (op, dtype): the shapes of the middle width (the dimensions after the token count, in the
order they first appear) are anchors, screened in full; any other shape keeps S, the variants its anchor
(the same token count) found within the ratio of its best (a still-noisy screen with its fastest sample),
those without a passing screen there, and the anchors' five best geometric means. The incumbent, which a
search also keeps, is not known here.
"""
import collections
import gzip
import json
import math
import sys


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    raw = load(argv[1])
    ratios = [float(r) for r in argv[2:]] or [1.3]
    if int(raw["context"].get("guided_out", "0") or 0) > 0:
        print(f"{argv[1]}: a guided search ({raw['context']['guided_out']} pairs not screened): replay a full one")
        return 2
    screens = collections.defaultdict(dict)  # (op, dtype, shape) -> variant -> figure; None: no passing screen
    rounds = collections.defaultdict(dict)
    for b in raw["benchmarks"]:
        name = b["name"]
        if name.startswith("ktune/") or name.count("/") < 3:
            continue
        op, dtype, shape, variant = name.split("/", 3)
        if "rounds" in b:
            if "median_us" in b and not b.get("error_occurred"):
                rounds[(op, dtype, shape)][variant] = b["median_us"]
            continue
        ok = "median_us" in b and not b.get("error_occurred") and b.get("samples", 0) > 0
        figure = (b["min_us"] if b.get("noisy") else b["median_us"]) if ok else None
        screens[(op, dtype, shape)][variant] = figure

    units = collections.defaultdict(list)
    for key in screens:
        units[key[:2]].append(key[2])

    def width(shape):
        return shape.split(",", 1)[1] if "," in shape else ""

    def tokens(shape):
        return shape.split(",", 1)[0]

    failed = False
    for i, ratio in enumerate(ratios):
        kept = total = 0
        misses = []
        for (op, dtype), shapes in units.items():
            widths = list(dict.fromkeys(width(s) for s in shapes))
            anchor_width = widths[len(widths) // 2] if len(widths) > 1 else None
            anchors = {tokens(s): s for s in shapes if width(s) == anchor_width}
            means = []
            for v in set.intersection(*(set(screens[(op, dtype, a)]) for a in anchors.values())) if anchors else ():
                figs = [screens[(op, dtype, a)][v] for a in anchors.values()]
                if v != "original" and all(f for f in figs):
                    means.append((sum(math.log(f) for f in figs), v))
            forced = {v for _, v in sorted(means)[:5]}
            for s in shapes:
                row = screens[(op, dtype, s)]
                total += len(row)
                anchor = anchors.get(tokens(s))
                if anchor is None or anchor == s:
                    kept += len(row)
                    continue
                guide = screens[(op, dtype, anchor)]
                best = min(f for v, f in guide.items() if f and v != "original")
                keep = {v for v in row if v == "original" or v in forced or not guide.get(v) or guide[v] <= ratio * best}
                kept += len(keep)
                timed = rounds.get((op, dtype, s)) or {v: f for v, f in row.items() if f}
                contenders = {v: f for v, f in timed.items() if v != "original"}
                if not contenders:
                    continue
                winner = min(contenders, key=contenders.get)
                if winner not in keep:
                    best_kept = min(f for v, f in row.items() if f and v in keep and v != "original")
                    misses.append((best_kept / row[winner] - 1, op, dtype, s, winner))
        print(f"ratio {ratio}: {kept} of {total} screens kept ({kept / total:.0%}); "
              f"{len(misses)} shapes whose winner would be left out")
        for cost, op, dtype, s, winner in sorted(misses, reverse=True)[:10]:
            print(f"  {op}/{dtype}/{s}: {winner}, the best kept screen {cost:+.1%}")
        failed = failed or (i == 0 and bool(misses))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
