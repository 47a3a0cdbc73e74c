#!/usr/bin/env python3
"""End to end: for each refit spec, write source shards with the independent
reference, compile the spec with `m2n compile`, run the plan with `m2n run`
on a backend, and check every destination shard byte for byte against the
reference.

    refit_e2e.py --work DIR [--backend sim|mpi|cuda-local|nccl] [--topology FILE]
                 [--random N] [SPEC ...]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "..", "scripts", "refit_reference.py")


def run(command):
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited "
                           f"{result.returncode}:\n{result.stderr}")
    return result


def world_size(spec):
    ranks = []
    for mesh in spec["meshes"]:
        size = 1
        for extent in mesh["shape"]:
            size *= extent
        r = mesh["ranks"]
        ranks += range(r["start"], r["start"] + size) if isinstance(r, dict) \
            else r
    return max(ranks) + 1


def one_case(spec_path, args, seed):
    name = os.path.splitext(os.path.basename(spec_path))[0]
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    src, dst = os.path.join(work, "src"), os.path.join(work, "dst")
    plan = os.path.join(work, "plan.m2n")
    reference = [sys.executable, REFERENCE]
    run(reference + ["fill", spec_path, src, "--seed", str(seed)])
    compile_command = ["m2n", "compile", spec_path, "-o", plan]
    if args.topology:
        compile_command += ["--topology", args.topology]
    compile_command += args.compile_flag
    run(compile_command)
    run_command = ["m2n", "run", plan, "--backend", args.backend,
                   "--src", src, "--dst", dst]
    if args.backend in ("mpi", "nccl"):
        with open(spec_path) as f:
            ranks = world_size(json.load(f))
        run_command = ["mpirun", "--allow-run-as-root", "--oversubscribe",
                       "-np", str(ranks)] + run_command
    run(run_command)
    run(reference + ["check", spec_path, dst, "--seed", str(seed)])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True)
    parser.add_argument("--backend", default="sim")
    parser.add_argument("--topology")
    parser.add_argument("--compile-flag", action="append", default=[],
                        help="a flag for m2n compile (repeatable)")
    parser.add_argument("--random", type=int, default=0)
    parser.add_argument("specs", nargs="*")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    specs = list(args.specs)
    for seed in range(args.random):
        path = os.path.join(args.work, f"random-{seed}.json")
        with open(path, "w") as f:
            f.write(run([sys.executable, REFERENCE, "random-spec",
                         str(seed)]).stdout)
        specs.append(path)
    failures = 0
    for index, spec in enumerate(specs):
        try:
            one_case(spec, args, seed=index)
            print(f"PASS {os.path.basename(spec)}")
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            failures += 1
            print(f"FAIL {os.path.basename(spec)}: {error}")
    print(f"{len(specs) - failures} of {len(specs)} refits right")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
