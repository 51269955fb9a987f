#!/usr/bin/env python3
"""bench/lib/tabulate.py: the figures the bench scripts read out of scalelab's JSON and the
medians and ratios they print, one subcommand each (no bench-specific analysis: that stays
beside its bench). Reads JSON on stdin where it says so; prints one line.

  throughput                 `show --json`: the first point's throughput (ops/s)
  placement                  `export`: the first trial's CPU order, comma-separated
  lost PART                  `export`: lost_records of PART (locks, offcpu) over every trial
  median [--fmt F] X…        the median
  ratio A B [FMT]            B / A
  medians-ratio "A…" "B…" [--fmt F] [--per D]
                             median(A)/D, median(B)/D and their ratio B/A
  at-least X TARGET          exit 0 when X >= TARGET, 1 when not
  smoke                      exit 0 in a smoke run (BENCH_SMOKE=1), 1 otherwise

In a smoke run (BENCH_SMOKE=1) nothing here judges a target.
"""
import json
import os
import statistics
import sys

SMOKE = os.environ.get("BENCH_SMOKE") == "1"


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "throughput":
        print(json.load(sys.stdin)["points"][0]["throughput"]["point"])
    elif cmd == "placement":
        trial = json.load(sys.stdin)["run"]["trials"][0]
        print(",".join(str(c) for c in trial["outcome"]["placement"]))
    elif cmd == "lost":
        part = args[0]
        trials = json.load(sys.stdin)["run"]["trials"]
        print(sum((t["outcome"].get(part) or {}).get("lost_records", 0) for t in trials))
    elif cmd == "median":
        fmt = ""
        if args and args[0] == "--fmt":
            fmt, args = args[1], args[2:]
        print(format(statistics.median(float(x) for x in args), fmt))
    elif cmd == "ratio":
        fmt = args[2] if len(args) > 2 else ".3f"
        print(format(float(args[1]) / float(args[0]), fmt))
    elif cmd == "medians-ratio":
        fmt, per, rest = ".0f", 1.0, []
        i = 0
        while i < len(args):
            if args[i] == "--fmt":
                fmt, i = args[i + 1], i + 2
            elif args[i] == "--per":
                per, i = float(args[i + 1]), i + 2
            else:
                rest.append(args[i])
                i += 1
        a = statistics.median(float(x) for x in rest[0].split()) / per
        b = statistics.median(float(x) for x in rest[1].split()) / per
        print(f"{a:{fmt}} {b:{fmt}} {b / a:.3f}")
    elif cmd == "at-least":
        return 0 if float(args[0]) >= float(args[1]) else 1
    elif cmd == "smoke":
        return 0 if SMOKE else 1
    else:
        sys.exit(f"tabulate.py: unknown subcommand {cmd}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
