"""m2n's MPI transport from an mpi4py communicator, under mpirun."""

import os
import shutil
import subprocess
import sys

import pytest

from cases import CASES
from conftest import _free_port

pytest.importorskip("mpi4py", reason="mpi4py is not installed (python/requirements.txt installs it)")
if not shutil.which("mpirun"):
    pytest.skip("mpirun is not installed", allow_module_level=True)

WORLD = 4


def test_mpi_transport_matches_torch(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(WORLD),
         sys.executable, os.path.join(here, "mpi_worker.py")],
        env=dict(os.environ, M2N_TEST_PORT=str(_free_port()), M2N_TEST_OUT=str(tmp_path), OMP_NUM_THREADS="1"),
        capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = sorted(line for r in range(WORLD) for line in (tmp_path / f"{r}.txt").read_text().splitlines())
    cases = [c.name for c in CASES if c.world == WORLD]
    assert len(cases) >= 3
    assert lines == sorted(f"{name} rank {r}: ok" for name in cases for r in range(WORLD)), run.stdout
