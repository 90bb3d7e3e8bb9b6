#!/usr/bin/env python3
"""Paired timing of two commands that each need an untimed prepare (hyperfine
1.15 runs its benchmarks one after the other, so a drift of the machine's speed
moves one side only).

    bench/paired.py RUNS NAME_A 'PREPARE_A' 'COMMAND_A' NAME_B 'PREPARE_B' 'COMMAND_B'

PREPARE runs through sh (output discarded, exit status ignored); COMMAND is
split as a shell splits words and run without one, output discarded, and must
exit 0. After three warm-up pairs, RUNS pairs alternate the order (A B, B A,
...). Prints each side's median and quartiles in ms and the median of the
per-pair ratios A/B."""
import shlex
import statistics
import subprocess
import sys
import time


def run(prepare, command):
    if prepare:
        subprocess.run(prepare, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    argv = shlex.split(command)
    start = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"paired: {command} exited {result.returncode}")
    return elapsed * 1000


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    a, b = sys.argv[2:5], sys.argv[5:8]
    for _ in range(3):
        run(a[1], a[2])
        run(b[1], b[2])
    ta, tb, ratios = [], [], []
    for i in range(runs):
        if i % 2:
            x = run(a[1], a[2])
            y = run(b[1], b[2])
        else:
            y = run(b[1], b[2])
            x = run(a[1], a[2])
        ta.append(x)
        tb.append(y)
        ratios.append(x / y)

    def quartiles(values):
        q = statistics.quantiles(values, n=4)
        return f"IQR {q[0]:.2f}-{q[2]:.2f}"

    print(f"{a[0]}: median {statistics.median(ta):.2f} ms ({quartiles(ta)})  "
          f"{b[0]}: median {statistics.median(tb):.2f} ms ({quartiles(tb)})  "
          f"paired ratio {a[0]}/{b[0]}: median {statistics.median(ratios):.3f} ({quartiles(ratios)}), n={runs}")


main()
