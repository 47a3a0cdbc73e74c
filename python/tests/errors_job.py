"""Bad input from Python on a 4-rank gloo job (worker.py runs it): each case
breaks one thing on one rank, records what every rank raised, and then
checks that a good step still works, so that a failure leaves nothing
stuck. test_errors.py judges the records."""

import torch
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

import m2n
from worker import device_mesh, garbage_like, same_bytes, shard

SRC_RANKS, DST_RANKS = (0, 1), (2, 3)
SHAPES = {"w": ((8, 6), torch.float32), "b": ((5,), torch.bfloat16)}
PLACEMENTS = {"w": ([Shard(0)], [Shard(1)]), "b": ([Replicate()], [Shard(0)])}


def globals_():
    generator = torch.Generator().manual_seed(7)
    return {name: torch.randn(shape, generator=generator).to(dtype) for name, (shape, dtype) in SHAPES.items()}


def layouts(dst_placements=None, dst_ranks=DST_RANKS):
    src_mesh, dst_mesh = device_mesh((2,), SRC_RANKS), device_mesh((len(dst_ranks),), dst_ranks)
    src, dst = {}, {}
    for name, (shape, dtype) in SHAPES.items():
        placements = (dst_placements or {}).get(name, PLACEMENTS[name][1])
        src[name] = m2n.TensorLayout.make(dtype, shape, src_mesh, PLACEMENTS[name][0], name=name)
        dst[name] = m2n.TensorLayout.make(dtype, shape, dst_mesh, placements, name=name)
    return src, dst


def good_tensors(rank):
    src_mesh, dst_mesh = device_mesh((2,), SRC_RANKS), device_mesh((2,), DST_RANKS)
    src, dst, expected = {}, {}, {}
    for name, g in globals_().items():
        if rank in SRC_RANKS:
            src[name] = shard(g, src_mesh, ["R" if isinstance(p, Replicate) else f"S({p.dim})" for p in PLACEMENTS[name][0]])
        if rank in DST_RANKS:
            expected[name] = shard(g, dst_mesh, ["R" if isinstance(p, Replicate) else f"S({p.dim})" for p in PLACEMENTS[name][1]])
            dst[name] = garbage_like(expected[name])
    return src, dst, expected


def good_step(group, rank):
    """A correct step; "ok" when every shard equals torch's."""
    src, dst, expected = good_tensors(rank)
    m2n.Refit(*layouts(), process_group=group, timeout=30).step(src, dst)
    bad = [name for name in expected if not same_bytes(expected[name], dst[name])]
    return "ok" if not bad else f"wrong shards: {bad}"


def attempt(fn):
    try:
        fn()
        return {"type": None, "message": ""}
    except Exception as error:  # noqa: BLE001 (the test records every kind)
        return {"type": type(error).__name__, "message": str(error)}


def step_with(group, rank, fault_rank, change):
    """A step in which `fault_rank` changes its (src, dst) dicts."""

    def run():
        src, dst, _ = good_tensors(rank)
        if rank == fault_rank:
            change(src, dst)
        m2n.Refit(*layouts(), process_group=group, timeout=30).step(src, dst)

    return run


def _set(role, name, make):
    def change(src, dst):
        tensors = src if role == "src" else dst
        tensors[name] = make(tensors[name])

    return change


def _drop(role, name):
    def change(src, dst):
        del (src if role == "src" else dst)[name]

    return change


def _add(name):
    def change(src, dst):
        src[name] = torch.zeros(3)

    return change


FAULTS = {
    "wrong-shape": (2, _set("dst", "w", lambda t: torch.empty(t.shape[0], t.shape[1] + 1))),
    "wrong-dtype": (0, _set("src", "w", lambda t: t.to(torch.float64))),
    "non-contiguous": (3, _set("dst", "w", lambda t: torch.empty(t.shape[1], t.shape[0]).t())),
    "wrong-device": (1, _set("src", "w", lambda t: t.to("meta"))),
    "missing": (2, _drop("dst", "b")),
    "not-in-plan": (0, _add("nope")),
}


def run(job):
    group, rank = job.group(4), job.rank
    out = {}
    for name, (fault_rank, change) in FAULTS.items():
        out[name] = attempt(step_with(group, rank, fault_rank, change))
        out[name + ":after"] = good_step(group, rank)

    # A process group smaller than the refit's ranks.
    def too_small():
        m2n.Refit(*layouts(dst_ranks=(2, 4)), process_group=group)

    out["group-size"] = attempt(too_small)
    out["group-size:after"] = good_step(group, rank)

    # Rank 3 compiles another refit than the others.
    def different_plans():
        src, dst, _ = good_tensors(rank)
        other = {"w": [Replicate()]} if rank == 3 else None
        refit = m2n.Refit(*layouts(dst_placements=other), process_group=group, timeout=30)
        if rank == 3:
            dst = {name: torch.empty(SHAPES[name][0], dtype=SHAPES[name][1]) if name == "w" else t for name, t in dst.items()}
        refit.step(src, dst)

    out["different-plans"] = attempt(different_plans)
    out["different-plans:after"] = good_step(group, rank)

    # Placements that are not shards of the tensor, from real DTensors.
    mesh = device_mesh((4,), (0, 1, 2, 3))
    partial = DTensor.from_local(torch.zeros(4, 4), mesh, [Partial()], run_check=False)
    out["partial"] = attempt(lambda: m2n.layouts({"layers.0.w": partial}))
    return out
