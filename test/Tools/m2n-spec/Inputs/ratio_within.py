"""Reads `m2n inspect --json` on stdin; prints 'within' when the predicted
time is at most FACTOR times the lower bound, else fails saying by how much.

    ratio_within.py FACTOR
"""
import json
import sys

summary = json.load(sys.stdin)
ratio = summary["predicted_seconds"] / summary["lower_bound_seconds"]
factor = float(sys.argv[1])
if ratio > factor:
    sys.exit(f"predicted / lower bound is {ratio:.3f}, over {factor}")
print(f"within {factor}: {ratio:.3f}")
