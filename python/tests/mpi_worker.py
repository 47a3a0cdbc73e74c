"""One rank of an MPI job (test_mpi.py starts it with mpirun): the cases of
cases.py that fit, moved by m2n's MPI transport from an mpi4py
communicator, each destination shard compared byte for byte with torch's
distribute_tensor(...).to_local(). Writes one line per case to
$M2N_TEST_OUT/RANK.txt."""

import os
import sys

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import m2n  # noqa: E402
from cases import CASES  # noqa: E402
from worker import device_mesh, garbage_like, global_tensor, same_bytes, shard, torch_placement  # noqa: E402

# DeviceMesh needs a default process group, even one it never uses.
import torch.distributed as dist  # noqa: E402

comm = MPI.COMM_WORLD
rank, world = comm.Get_rank(), comm.Get_size()
port = comm.bcast(os.environ.get("M2N_TEST_PORT"), root=0)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)

lines = []
for case in [c for c in CASES if c.world == world]:
    g = global_tensor(case.shape, case.dtype, 11)
    src_mesh, dst_mesh = device_mesh(case.src_mesh, case.src_ranks), device_mesh(case.dst_mesh, case.dst_ranks)
    layouts = [
        {case.name: m2n.TensorLayout.make(g.dtype, g.shape, mesh, [torch_placement(p) for p in ps])}
        for mesh, ps in ((src_mesh, case.src), (dst_mesh, case.dst))
    ]
    refit = m2n.Refit(*layouts, transport=m2n.mpi_transport(comm))
    src = {case.name: shard(g, src_mesh, case.src)} if rank in case.src_ranks else {}
    expected = shard(g, dst_mesh, case.dst) if rank in case.dst_ranks else None
    dst = {case.name: garbage_like(expected)} if expected is not None else {}
    refit.step(src, dst)
    ok = expected is None or same_bytes(expected, dst[case.name])
    lines.append(f"{case.name} rank {rank}: {'ok' if ok else 'WRONG'}\n")
with open(os.path.join(os.environ["M2N_TEST_OUT"], f"{rank}.txt"), "w") as f:
    f.writelines(lines)
dist.destroy_process_group()
