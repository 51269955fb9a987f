#!/usr/bin/env python3
"""Compares explain's answers between the arms of bench/explain-sampling-agreement.

usage: explain_sampling_compare.py WORKLOAD ANSWERS.jsonl   (one line per run: arm, round, explain --json)
"""
import json, math, sys
from collections import Counter
from statistics import mean, stdev

name, path = sys.argv[1], sys.argv[2]
runs = [json.loads(l) for l in open(path)]

def key(c):
    c = c["cause"]
    obj = "" if c["object"].startswith("0x") or c["object"].endswith(" addresses") else c["object"]
    return (c["kind"], c["what"], obj, c["caller"])

def label(k):
    kind, what, obj, caller = k
    s = "%s %s" % (kind, what)
    if obj: s += " on " + obj
    if caller: s += " from " + caller
    return s if len(s) <= 84 else s[:30] + "..." + s[-51:]

# Not the workload's: the measuring (the tracers' and the profiler's kernel code) and the hypervisor's steal, which the in-kernel tracer names as a cause of
# its own (the perf tracer does not measure it: there it is in the unexplained rest).
HOST = ("measurement", "steal")
BLOCKED = ("user_lock", "kernel_lock", "blocking", "blocked")

def coarse(k):
    """the key a run without traces (`alone`: the profile only) can name too: every blocked
    cause, and the hypervisor's steal (which it cannot tell from blocked time), is time off a
    CPU; a kernel lock's spin is CPU in its spinning function"""
    kind, what, obj, caller = k
    if kind in BLOCKED or kind == "steal":
        return ("off_cpu", "off a CPU, every cause (and steal)", "", "")
    if kind == "kernel_spin" and "CPU in " in what:
        return ("function", what.split("CPU in ", 1)[1].split(",")[0].strip(), "[kernel]", "")
    return k

def grouped(values, host=("measurement",)):
    """values(e, host) with its keys coarse (see coarse) and summed"""
    def f(e):
        v = values(e, host)
        if v is None:
            return None
        out = {}
        for k, (share, iv) in v.items():
            k = coarse(k)
            s0, i0 = out.get(k, (0.0, 0.0))
            out[k] = (s0 + share, None if i0 is None or iv is None else math.hypot(i0, iv))
        return out
    return f

def causes(e, host=HOST):
    """cause key -> (share %, interval in points) of the workload's growth: the growth less the
    measuring's (the tracers' and profiler's kernel code, which the perf tracer makes grow far
    more than the in-kernel one), workload causes only"""
    g = e.get("growth")
    out = {}
    if not g or not g["noise"]["beyond"]:
        return None  # no growth beyond the trials' noise: its shares are noise too
    every = g["named"] + g["within_noise"]
    growth = g["delta_ns"] - sum(c["delta_ns"] for c in every if c["cause"]["kind"] in host)
    if growth <= 0:
        return out
    for c in every:
        if c["cause"]["kind"] in ("run_queue",) + host:
            continue
        share = c["delta_ns"] / growth * 100
        iv = c.get("interval_ns")
        iv = None if iv is None else iv / growth * 100
        k = key(c)
        if k in out:  # heap locks at several addresses: add up
            s0, i0 = out[k]
            out[k] = (s0 + share, None if i0 is None or iv is None else math.hypot(i0, iv))
        else:
            out[k] = (share, iv)
    return out

def split(e, host=HOST):
    """cause key -> share % of the workload's cost per op at the largest N (less the measuring),
    workload causes only"""
    p = e["points"][-1]
    total = p["accounting"]["ns_per_op_task"] - sum(
        x["ns_per_op"] for x in p["parts"] if x["cause"]["kind"] in host)
    out = {}
    for part in p["parts"]:
        if part["cause"]["kind"] in ("run_queue",) + host or total <= 0:
            continue
        k = key(part)
        out[k] = out.get(k, 0.0) + part["ns_per_op"] / total * 100
    return out

def top(e):
    g = e.get("growth")
    if not g: return None
    named = [c for c in g["named"] if c["delta_ns"] > 0 and c["cause"]["kind"] not in ("run_queue",) + HOST]
    return key(named[0]) if named else None

def traced_ratio(e):
    p = e["points"][-1]
    t, r = p.get("offcpu_traced_ns"), p.get("offcpu_residual_ns")
    if t is None or not r or r < 0.05 * p["accounting"]["ns_per_op_task"]:
        return None
    return t / r

def welch(a, b):
    if len(a) < 2 or len(b) < 2: return None
    va, vb = stdev(a) ** 2 / len(a), stdev(b) ** 2 / len(b)
    se2 = va + vb
    if se2 == 0: return 0.0
    dof = se2 * se2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    # t(0.975, ν) at the whole ν below the Welch-Satterthwaite one (the wider, conservative)
    t975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16,
            2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052,
            2.048, 2.045, 2.042]
    t = t975[min(max(int(dof), 1), 30) - 1]
    return t * math.sqrt(se2)

ARMS = ("sampled", "every", "full", "alone")
REFS = ("every", "full", "alone", "self")
arms = {a: [] for a in ARMS}
for r in sorted(runs, key=lambda r: r["round"]):
    arms.setdefault(r["arm"], []).append(r)
arms["self"] = arms["sampled"] if len(arms["sampled"]) >= 2 else []
print()
print("== %s" % name)
for arm in [a for a in ARMS if arms[a]]:
    tops = Counter("-" if t is None else label(t) for t in (top(r["explain"]) for r in arms[arm]))
    ratios = ["-" if x is None else "%.3f" % x for x in (traced_ratio(r["explain"]) for r in arms[arm])]
    print("  %-7s traced/residual at the largest N: %s; top cause: %s" % (
        arm, " ".join(ratios), "; ".join("%s (%d of %d)" % (t, c, len(arms[arm])) for t, c in tops.most_common())))
seen = [x for x in (traced_ratio(r["explain"]) for r in arms["full"]) if x is not None]
low = [x for x in seen if x < 0.9]
if low:
    print("  note: in %d of the %d full (perf) runs where it is checked, the trace saw %.0f–%.0f%% of the blocked time"
          " the accounting measured (the perf tracer does not take the host's steal out of the residual, as the"
          " in-kernel one does): there its split of blocked time is no reference" % (
              len(low), len(seen), 100 * min(low), 100 * max(low)))
def blocking(e):
    """the largest N's traced trial's blocking switches per op against its untraced reference's"""
    b = (e["points"][-1].get("trace_cost") or {}).get("blocking")
    if not b or not b["untraced_per_kop"]:
        return None
    return b["traced_per_kop"] / b["untraced_per_kop"]
for arm in ARMS:
    ratios = [x for x in (blocking(r["explain"]) for r in arms[arm]) if x is not None]
    if ratios:
        # the measuring can make the tasks block more (a lock's hold lengthened by its
        # interruptions): an arm whose tasks blocked more has larger blocked causes
        print("  %-7s blocking per op at the largest N, traced ÷ untraced: median ×%.2f (×%.2f–×%.2f over %d runs)" % (
            arm, sorted(ratios)[len(ratios) // 2], min(ratios), max(ratios), len(ratios)))
def offcpu_shares(e):
    """the largest N's time off a CPU as a share of the cost per op: in the traced trial, and in
    the untraced trial run just before it (no tracer, no profile: what the workload does
    alone), and the traced trial's slowdown"""
    tc = e["points"][-1].get("trace_cost") or {}
    b = tc.get("blocking")
    if not b or not tc.get("traced_ns") or not tc.get("untraced_ns"):
        return None
    return (100 * b["traced_offcpu_ns"] / tc["traced_ns"], 100 * b["untraced_offcpu_ns"] / tc["untraced_ns"],
            tc["slowdown"])
for arm in ARMS:
    seen = [x for x in (offcpu_shares(r["explain"]) for r in arms[arm]) if x is not None]
    if seen:
        # against the workload untraced: an arm whose measuring lengthens each wait or each op
        # moves the split of its answer, whatever its chains (the reference arms are dearer)
        t, u, s = (sorted(c)[len(c) // 2] for c in zip(*seen))
        print("  %-7s off a CPU at the largest N, share of the cost per op: traced %.1f%%, untraced %.1f%% (%+.1f points);"
              " slowdown ×%.2f (medians over %d runs)" % (arm, t, u, t - u, s, len(seen)))
present = [a for a in ARMS if arms[a]]
print("  the growth was beyond the trials' noise in %s of the %s runs" % (
    ", ".join("%d" % sum(causes(r["explain"]) is not None for r in arms[a]) for a in present), ", ".join(present)))

def spread(x):
    return "" if len(x) < 2 else " ±%.0f" % stdev(x)

def largest(values, ref, k=3):
    """the reference arm's k largest causes by mean share over its runs"""
    seen = {}
    for r in arms[ref]:
        for key_, (s, _) in (values(r["explain"]) or {}).items():
            seen.setdefault(key_, []).append(s)
    return sorted(seen, key=lambda k_: -sum(seen[k_]))[:k]

def table(title, rule, values_of):
    """values_of(ref)(run) -> cause key -> (share, stated interval or None), or None for a run
    left out: against `alone` (no trace), the keys that a profile alone names (see coarse)"""
    print("  %-84s %-6s %14s %14s %7s %8s %10s" % (title, "vs", "sampled", "reference", "diff", "±95%", rule))
    for ref in [r for r in REFS if arms.get(r)]:
        values = values_of(ref)
        # `self`: each round's sampled run against the next round's, the noise floor of the
        # rule (identical runs differ too)
        other = arms["sampled"][1:] + arms["sampled"][:1] if ref == "self" else arms[ref]
        for k in largest(values, "sampled" if ref == "self" else ref):
            # rounds where both runs have a value
            pairs = [(values(x["explain"]), values(y["explain"])) for x, y in zip(arms["sampled"], other)]
            pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
            if not pairs:
                print("  %-84s %-6s no round where both grew beyond the trials' noise" % (label(k), ref))
                continue
            per = [(x.get(k, (0.0, None)), y.get(k, (0.0, None))) for x, y in pairs]
            a = [sa for (sa, _), _ in per]; b = [sb for _, (sb, _) in per]
            agree = sum(abs(sa - sb) <= max(5.0, math.hypot(ia or 0.0, ib or 0.0)) for (sa, ia), (sb, ib) in per)
            w = welch(a, b)
            print("  %-84s %-6s %9.1f%%%-4s %9.1f%%%-4s %+6.1f %8s %5d of %d" % (
                label(k), ref, mean(a), spread(a), mean(b), spread(b),
                mean(a) - mean(b), "-" if w is None else "±%.1f" % w, agree, len(per)))

def split_values(e, host=HOST):
    return {k: (s, None) for k, s in split(e, host).items()}

def of(values):
    return lambda ref: grouped(values) if ref == "alone" else (lambda e: values(e))

if any(causes(r["explain"]) for r in arms["every"] + arms["full"] + arms["alone"]):
    table("share of the workload's growth (each reference's largest causes)", "agree", of(causes))
else:
    print("  the workload's cost per op grew beyond noise in no reference run: no shares of a growth to compare")
table("share of the workload's cost per op at the largest N", "within 5", of(split_values))

def blocked_split(e, host=HOST):
    """blocked cause key -> its share % of the time off a CPU at the largest N: which waits,
    whatever each arm's measuring lengthened them all by (None without a split of it)"""
    parts = [x for x in e["points"][-1]["parts"] if x["cause"]["kind"] in BLOCKED]
    total = sum(x["ns_per_op"] for x in parts)
    if total <= 0 or all(x["cause"]["kind"] == "blocked" for x in parts):
        return None
    out = {}
    for x in parts:
        k = key(x)
        s0, _ = out.get(k, (0.0, None))
        out[k] = (s0 + x["ns_per_op"] / total * 100, None)
    return out

if any(blocked_split(r["explain"]) for r in arms["every"] + arms["full"]):
    print("  (without `alone`, which does not split the time off a CPU)")
    REFS = ("every", "full", "self")
    table("share of the time off a CPU at the largest N, by cause", "within 5", lambda ref: blocked_split)
