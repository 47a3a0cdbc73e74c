"""The CUDA executor: every rank on this process's GPU (sim), and
m2n.Refit with one GPU per rank, over torch.distributed's NCCL and over
m2n's own NCCL transport on the group's communicator. Skipped without a GPU; run by
scripts/gpu-check.sh."""

import threading

import pytest
import torch

import m2n
from cases import CASES
from conftest import outcomes, run_job
from test_local import shards_by_plan, two_sided_spec

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if not m2n._m2n.HAVE_CUDA:
    pytest.skip("this m2n was built without CUDA", allow_module_level=True)


def run_sim(plan, tensors):
    """Every rank's run on this GPU, each in its thread: its exception, or
    None."""
    world = m2n.SimWorld(plan.world_size)
    errors = [None] * plan.world_size

    def rank(r):
        try:
            transport = world.transport(r)
            transport.set_timeout(30)
            m2n.Executor(plan, transport, device="cuda").run(tensors[r]["src"], tensors[r]["dst"])
            torch.cuda.current_stream().synchronize()
        except Exception as error:  # noqa: BLE001
            errors[r] = error

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(plan.world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def cuda_shards(plan, globals_, cpu_rank=None):
    return [
        {
            role: {n: t if r == cpu_rank else t.cuda() for n, t in ts.items()}
            for role, ts in shards_by_plan(plan, r, globals_).items()
        }
        for r in range(plan.world_size)
    ]


def globals_():
    generator = torch.Generator().manual_seed(5)
    return {"w": torch.randn(10, 7, generator=generator), "b": torch.randn(5, generator=generator).bfloat16()}


def test_sim_ranks_on_one_gpu():
    plan = m2n.compile(two_sided_spec())
    g = globals_()
    tensors = cuda_shards(plan, g)
    assert run_sim(plan, tensors) == [None] * plan.world_size
    for r in range(4, 7):
        for b in plan.bindings(r):
            index = tuple(slice(o, o + s) for o, s in zip(b.offset, b.shape))
            assert torch.equal(tensors[r]["dst"][b.name].cpu(), g[b.name][index])


def test_host_tensor_on_a_cuda_executor_is_refused():
    plan = m2n.compile(two_sided_spec())
    errors = run_sim(plan, cuda_shards(plan, globals_(), cpu_rank=0))
    assert isinstance(errors[0], ValueError) and "is on cpu, expected cuda:0" in str(errors[0])
    assert all(isinstance(e, m2n.Error) and "rank 0" in str(e) for e in errors[1:]), errors


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL takes one GPU per rank: needs 2 GPUs")
def test_refit_over_nccl(tmp_path):
    world = min(torch.cuda.device_count(), 8)
    results = run_job("nccl", world, tmp_path)
    cases = [c for c in CASES if c.world <= world]
    for method in ("refit", "own-nccl"):
        for case in cases:
            got = outcomes(results, f"{method}:{case.name}")
            assert set(got.values()) == {"ok"}, (method, got)
