#!/usr/bin/env python3
"""Side-by-side comparison of two decode_bench binaries on one model (this VM's speed swings by up to 2x, so
single readings cannot judge a change; alternating runs in the same minutes can).

  bench/ab_decode_bench.py OLD_BINARY NEW_BINARY MODEL.gguf [--rounds N] [-- decode_bench flags...]

Runs the two binaries alternately (the order swapped every round), default flags --prefill 512 --reps 3
--decode 64, and prints for decode and prefill tok/s each binary's median and best and the median of the
per-round ratios new / old (the figure to judge by). Prints the same as one JSON object with --json.
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(binary, model, flags):
    try:
        out = subprocess.run([binary, model] + flags, capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"cannot run {binary}: {e.strerror}")
    if out.returncode != 0:
        sys.exit(f"{binary} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("model")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--json", action="store_true")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    flags = argv[split + 1:] or ["--prefill", "512", "--reps", "3", "--decode", "64"]
    results = {"old": [], "new": []}
    for i in range(args.rounds):
        for which in ("old", "new") if i % 2 == 0 else ("new", "old"):
            results[which].append(run(getattr(args, which), args.model, flags))
    summary = {}
    for key in ("decode_tokens_per_s", "prefill_tokens_per_s"):
        old = [r[key] for r in results["old"]]
        new = [r[key] for r in results["new"]]
        summary[key] = {
            "old_median": statistics.median(old), "old_best": max(old),
            "new_median": statistics.median(new), "new_best": max(new),
            "ratio_median": statistics.median(n / o for o, n in zip(old, new)),
        }
    if args.json:
        print(json.dumps({"model": args.model, "rounds": args.rounds, "flags": flags, **summary}))
        return
    for key, s in summary.items():
        print(f"{key}: old {s['old_median']:.1f} (best {s['old_best']:.1f}), new {s['new_median']:.1f} "
              f"(best {s['new_best']:.1f}), new/old per round, median {s['ratio_median']:.3f}")


if __name__ == "__main__":
    main()
