"""docs/python.md's worked example, python/examples/trainer_server.py, run
as torchrun would run it: 6 processes of one gloo job."""

import os
import subprocess
import sys

from conftest import _free_port

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "trainer_server.py")


def test_trainer_and_server_in_one_job():
    world, port = 6, str(_free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, EXAMPLE],
            env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                     OMP_NUM_THREADS="1"),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for r in range(world)
    ]
    outputs = []
    for p in procs:
        try:
            outputs.append(p.communicate(timeout=300)[0])
        finally:
            if p.poll() is None:
                p.kill()
    for r, (p, out) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, out
        assert f"rank {r}: refitted 3 tensors 3 times" in out
