"""Multi-process refits over gloo, through m2n.Refit and m2n.xferdtensor:
every destination shard equals torch's own distribute_tensor(...).to_local()
byte for byte (worker.py, cases.py)."""

import pytest

from cases import CASES
from conftest import outcomes, run_job

WORLD_SIZE = max(c.world for c in CASES)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_job("layouts", WORLD_SIZE, tmp_path_factory.mktemp("layouts"))


@pytest.mark.parametrize("method", ["refit", "xferdtensor"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_layout(results, method, case):
    got = outcomes(results, f"{method}:{case.name}")
    assert sorted(got) == list(range(case.world))
    failed = {rank: result for rank, result in got.items() if result != "ok"}
    assert not failed, "\n".join(f"rank {r}:\n{t}" for r, t in failed.items())


def test_xferdtensor_reuses_its_plan(results):
    got = outcomes(results, "xferdtensor:cache")
    assert got and all(result == "ok" for result in got.values()), got
