"""Runs multi-process jobs: WORLD_SIZE processes of worker.py over gloo,
spawned once per job, each running every case of the job."""

import json
import os
import socket
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# Past this, a job has hung: every rank is killed and the job fails.
JOB_TIMEOUT_S = 900


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(name, world_size, tmp_path):
    """Every rank's results of job `name`: a list, by rank, of dicts of
    case -> "ok" or what failed."""
    port = str(_free_port())
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    logs = [open(tmp_path / f"{rank}.log", "w+") for rank in range(world_size)]
    procs = [
        subprocess.Popen(
            [sys.executable, os.path.join(HERE, "worker.py"), name, str(rank), str(world_size), port, str(tmp_path)],
            stdout=logs[rank],
            stderr=subprocess.STDOUT,
            env=env,
        )
        for rank in range(world_size)
    ]
    try:
        for proc in procs:
            proc.wait(timeout=JOB_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    results = []
    for rank, proc in enumerate(procs):
        path = tmp_path / f"{rank}.json"
        if proc.returncode != 0 or not path.exists():
            logs[rank].seek(0)
            pytest.fail(f"job {name}: rank {rank} exited with {proc.returncode}:\n{logs[rank].read()[-4000:]}")
        results.append(json.loads(path.read_text()))
    for log in logs:
        log.close()
    return results


def outcomes(results, case):
    """case's outcome on every rank that ran it."""
    return {rank: r[case] for rank, r in enumerate(results) if case in r}
