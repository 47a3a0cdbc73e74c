"""One rank of a multi-process test job over gloo.

    python worker.py JOB RANK WORLD_SIZE PORT OUT_DIR

runs every case of JOB on this rank and writes OUT_DIR/RANK.json: per case,
"ok" or what went wrong. The expected shards are torch's own:
distribute_tensor(global, mesh, placements).to_local() on real DeviceMesh
objects, compared byte for byte.
"""

import datetime
import json
import os
import sys
import traceback
import zlib

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m2n  # noqa: E402
from cases import CASES, EXTRA_DTYPES, Case  # noqa: E402


def torch_placement(text):
    return Replicate() if text == "R" else Shard(int(text[2:-1]))


def device_mesh(shape, ranks):
    # The meshes' own process groups are not needed: the shards are cut
    # locally (src_data_rank=None) and m2n moves the data.
    mesh = torch.tensor(ranks, dtype=torch.int64).reshape(shape)
    return DeviceMesh("cpu", mesh, _init_backend=False)


def global_tensor(shape, dtype, seed):
    """Random bytes of every kind of element (NaNs included), the same on
    every rank."""
    dtype = getattr(torch, dtype)
    generator = torch.Generator().manual_seed(seed)
    numel = 1
    for s in shape:
        numel *= s
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    size = numel * torch.empty((), dtype=dtype).element_size()
    return torch.randint(0, 256, (size,), dtype=torch.uint8, generator=generator).view(dtype).reshape(shape)


def shard(tensor, mesh, placements):
    """This rank's shard as torch cuts it; empty where the rank is not in
    the mesh."""
    return distribute_tensor(tensor, mesh, [torch_placement(p) for p in placements], src_data_rank=None).to_local()


def same_bytes(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


def garbage_like(t):
    out = torch.empty_like(t)
    out.reshape(-1).view(torch.uint8).fill_(0x5A if t.dtype != torch.bool else 1)
    return out


class Job:
    def __init__(self, rank, world, device="cpu"):
        self.rank = rank
        self.world = world
        self.device = device
        self._groups = {}

    def group(self, size):
        """The group of ranks 0 .. size - 1; made by every rank, in order."""
        if size not in self._groups:
            self._groups[size] = dist.new_group(list(range(size))) if size < self.world else dist.group.WORLD
        return self._groups[size]

    def groups(self, sizes):
        for size in sorted(set(sizes)):
            self.group(size)


def side_tensors(case: Case, rank, dtypes):
    """Per tensor name: (global tensor, src DeviceMesh, dst DeviceMesh)."""
    src_mesh = device_mesh(case.src_mesh, case.src_ranks)
    dst_mesh = device_mesh(case.dst_mesh, case.dst_ranks)
    out = {}
    for i, dtype in enumerate(dtypes):
        name = case.name if i == 0 else f"{case.name}.{dtype}"
        out[name] = (global_tensor(case.shape, dtype, zlib.crc32(f"{case.name}/{dtype}".encode())), src_mesh, dst_mesh)
    return out


def refit_case(job, case: Case, own_nccl=False):
    """The case and its extra dtypes as one m2n.Refit; each rank describes
    only its own side, a trainer's through m2n.WeightSource."""
    rank = job.rank
    tensors = side_tensors(case, rank, (case.dtype,) + EXTRA_DTYPES)
    dst_layouts, dst, expected, dtensors = {}, {}, {}, {}
    for name, (g, src_mesh, dst_mesh) in tensors.items():
        if rank in case.src_ranks:
            dtensors[name] = distribute_tensor(g, src_mesh, [torch_placement(p) for p in case.src], src_data_rank=None)
        if rank in case.dst_ranks:
            dst_layouts[name] = m2n.TensorLayout.make(
                g.dtype, g.shape, dst_mesh, [torch_placement(p) for p in case.dst], name=name
            )
            expected[name] = shard(g, dst_mesh, case.dst)
            dst[name] = garbage_like(expected[name]).to(job.device)
    # The trainer's side through the weight source: its metadata, and its
    # (name, local shard) pairs.
    source = m2n.WeightSource(dtensors)
    src = {name: t.to(job.device) for name, t in source}
    group = job.group(case.world)
    src_layouts, dst_layouts = m2n.gather_layouts(source.metadata(), dst_layouts, group)
    transport = m2n.nccl_transport(group) if own_nccl else None
    refit = m2n.Refit(
        src_layouts, dst_layouts, process_group=group, transport=transport, timeout=60, device=job.device
    )
    for _ in range(2):  # a refit runs at every training step
        refit.step(src, dst)
        check(expected, {name: t.cpu() for name, t in dst.items()})
        for t in dst.values():
            t.copy_(garbage_like(t))


def xfer_case(job, case: Case):
    rank = job.rank
    ((name, (g, src_mesh, dst_mesh)),) = side_tensors(case, rank, (case.dtype,)).items()
    src = m2n.DTensorRef(shard(g, src_mesh, case.src) if rank in case.src_ranks else None, g.shape, dtype=g.dtype)
    expected = shard(g, dst_mesh, case.dst) if rank in case.dst_ranks else None
    dst = m2n.DTensorRef(garbage_like(expected), g.shape) if expected is not None else None
    placements = [torch_placement(p) for p in case.src], [torch_placement(p) for p in case.dst]
    out = m2n.xferdtensor(src, src_mesh, placements[0], dst, dst_mesh, placements[1], job.group(case.world))
    if expected is not None:
        check({name: expected}, {name: out})


def check(expected, got):
    for name, want in expected.items():
        if not same_bytes(want, got[name]):
            raise AssertionError(f"{name}: rank's shard differs from torch's: {got[name]} != {want}")


def run_cases(job, cases, fn):
    results = {}
    job.groups(c.world for c in cases)
    for case in cases:
        if job.rank >= case.world:
            continue
        try:
            fn(job, case)
            results[case.name] = "ok"
        except Exception:
            results[case.name] = traceback.format_exc()
    return results


def layouts_job(job):
    out = {}
    for method, fn in (("refit", refit_case), ("xferdtensor", xfer_case)):
        for name, result in run_cases(job, CASES, fn).items():
            out[f"{method}:{name}"] = result
    # A layout seen before reuses its compiled plan and executor.
    executors = len(m2n._refit._xfer_executors)
    again = run_cases(job, CASES[:1], xfer_case)
    reused = len(m2n._refit._xfer_executors) == executors
    if again:
        out["xferdtensor:cache"] = again[CASES[0].name] if reused else "a second call made a new executor"
    return out


def nccl_job(job):
    """The cases that fit the job, through m2n.Refit on CUDA tensors (one
    GPU per rank): over torch.distributed's NCCL, and over m2n's own NCCL
    transport on the group's communicator."""
    cases = [c for c in CASES if c.world <= job.world]
    out = {f"refit:{name}": r for name, r in run_cases(job, cases, refit_case).items()}
    own = run_cases(job, cases, lambda job, case: refit_case(job, case, own_nccl=True))
    out.update({f"own-nccl:{name}": r for name, r in own.items()})
    return out


def main():
    job_name, rank, world, port, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    nccl = job_name == "nccl"
    if nccl:
        torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl" if nccl else "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=120),
    )
    job = Job(rank, world, f"cuda:{rank}" if nccl else "cpu")

    import errors_job  # beside this file; it imports this one

    jobs = {"layouts": layouts_job, "errors": errors_job.run, "nccl": nccl_job}
    results = jobs[job_name](job)
    with open(os.path.join(out_dir, f"{rank}.json.tmp"), "w") as f:
        json.dump(results, f)
    os.replace(os.path.join(out_dir, f"{rank}.json.tmp"), os.path.join(out_dir, f"{rank}.json"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
