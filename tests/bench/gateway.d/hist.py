#!/usr/bin/env python3
"""What a Prometheus histogram saw between two scrapes: hist.py BEFORE AFTER
METRIC 'label="v",...' prints "count mean_us p50_us p99_us" (the quantiles
interpolated linearly inside their bucket, as Prometheus' histogram_quantile
does). Used by tests/bench/gateway to set the frontend's own gateway-added
histogram beside the latency the load generator measured."""
import re
import sys


def read(path, metric, want):
    buckets, total, count = {}, 0.0, 0.0
    for line in open(path, encoding="utf-8"):
        m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line.strip())
        if not m or not m.group(1).startswith(metric):
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        if any(labels.get(k) != v for k, v in want.items()):
            continue
        v = float(m.group(3))
        if m.group(1) == metric + "_bucket":
            le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
            buckets[le] = v
        elif m.group(1) == metric + "_sum":
            total = v
        elif m.group(1) == metric + "_count":
            count = v
    return buckets, total, count


def quantile(q, bounds, counts):
    n = counts[-1]
    if n <= 0:
        return 0.0
    rank, lo = q * n, 0.0
    prev = 0.0
    for b, c in zip(bounds, counts):
        if c >= rank:
            if b == float("inf"):
                return lo
            return lo + (b - lo) * ((rank - prev) / (c - prev) if c > prev else 0)
        lo, prev = b, c
    return lo


def main():
    before, after, metric, sel = sys.argv[1:5]
    want = dict(re.findall(r'(\w+)="([^"]*)"', sel))
    b0, s0, n0 = read(before, metric, want)
    b1, s1, n1 = read(after, metric, want)
    bounds = sorted(b1)
    counts = [b1[b] - b0.get(b, 0.0) for b in bounds]
    n = n1 - n0
    mean = (s1 - s0) / n * 1e6 if n > 0 else 0.0
    print("%d %.0f %.0f %.0f" % (n, mean, quantile(0.5, bounds, counts) * 1e6, quantile(0.99, bounds, counts) * 1e6))


main()
