"""Bad input from Python on a 4-rank gloo job (errors_job.py): the rank at
fault raises ValueError naming the tensor, every other rank m2n.Error naming
that rank, nothing hangs, and the next good step works."""

import pytest

from conftest import outcomes, run_job
from errors_job import FAULTS


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_job("errors", 4, tmp_path_factory.mktemp("errors"))


# What the faulty rank's message must say, beside the tensor's name.
SAYS = {
    "wrong-shape": "shape [8, 4], expected [8, 3]",
    "wrong-dtype": "dtype F64, expected F32",
    "non-contiguous": "not contiguous",
    "wrong-device": "is on meta, expected cpu",
    "missing": "is missing",
}


@pytest.mark.parametrize("fault", sorted(SAYS))
def test_bad_tensor_fails_every_rank(results, fault):
    fault_rank = FAULTS[fault][0]
    got = outcomes(results, fault)
    tensor = "'b'" if fault == "missing" else "'w'"
    assert got[fault_rank]["type"] == "ValueError", got[fault_rank]
    assert f"tensor {tensor}" in got[fault_rank]["message"] and SAYS[fault] in got[fault_rank]["message"]
    assert f"rank {fault_rank}" in got[fault_rank]["message"]
    for rank, outcome in got.items():
        if rank != fault_rank:
            assert outcome["type"] == "Error", (rank, outcome)
            assert outcome["message"].startswith("ABORTED") and f"rank {fault_rank}" in outcome["message"], outcome


@pytest.mark.parametrize("case", sorted(SAYS) + ["not-in-plan", "group-size", "different-plans"])
def test_next_step_works(results, case):
    assert set(outcomes(results, case + ":after").values()) == {"ok"}


def test_tensor_not_in_plan_fails_its_rank(results):
    got = outcomes(results, "not-in-plan")
    assert got[0]["type"] == "ValueError" and "tensor 'nope' is not in the plan" in got[0]["message"]
    # The others moved their weights: the plan itself was whole.
    assert all(got[rank]["type"] is None for rank in (1, 2, 3)), got


def test_process_group_of_wrong_size(results):
    for outcome in outcomes(results, "group-size").values():
        assert outcome["type"] == "ValueError"
        assert "the plan has 5 ranks but the transport 4" in outcome["message"]


def test_ranks_holding_different_plans(results):
    got = outcomes(results, "different-plans")
    assert len(got) == 4
    for outcome in got.values():
        assert outcome["type"] == "Error" and outcome["message"].startswith("ABORTED"), outcome
        assert "plan" in outcome["message"]


def test_partial_placement_names_the_parameter(results):
    for outcome in outcomes(results, "partial").values():
        assert outcome["type"] == "ValueError"
        assert "'layers.0.w'" in outcome["message"] and "Partial" in outcome["message"]
