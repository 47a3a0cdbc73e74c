"""A trainer and a server in one torch.distributed job, refitted by m2n.

    torchrun --nproc-per-node 6 python/examples/trainer_server.py

Ranks 0-3 train a small model on a 2 x 2 (FSDP x TP) mesh; ranks 4 and 5
serve it with tensor parallelism 2. Each side describes only what it holds;
m2n.gather_layouts tells every rank both sides, m2n.Refit compiles the plan
once, and every training step moves the weights with one call per rank.
"""

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Shard, distribute_tensor

import m2n

TRAINER, SERVER = [0, 1, 2, 3], [4, 5]
SHAPES = {"up.weight": (64, 32), "up.bias": (64,), "down.weight": (32, 64)}
# The server's tensor parallelism: up is split by rows, down by columns.
SERVED = {"up.weight": [Shard(0)], "up.bias": [Shard(0)], "down.weight": [Shard(1)]}


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    # Every rank makes both meshes (their groups are collective to create).
    train_mesh = DeviceMesh("cpu", torch.tensor(TRAINER).reshape(2, 2), mesh_dim_names=("fsdp", "tp"))
    serve_mesh = DeviceMesh("cpu", torch.tensor(SERVER), mesh_dim_names=("tp",))
    full = {name: torch.randn(shape, generator=torch.Generator().manual_seed(i)) for i, (name, shape) in
            enumerate(SHAPES.items())}

    trainer_side, server_side = {}, {}
    if rank in TRAINER:
        # FSDP over dim 0 on the first axis, TP over the last dim on the second.
        model = {name: distribute_tensor(t, train_mesh, [Shard(0), Shard(t.dim() - 1)]) for name, t in full.items()}
        source = m2n.WeightSource(model)
        trainer_side = source.metadata()
    if rank in SERVER:
        engine = {name: torch.empty(distribute_tensor(t, serve_mesh, SERVED[name]).to_local().shape)
                  for name, t in full.items()}
        server_side = {name: m2n.TensorLayout.make(t.dtype, t.shape, serve_mesh, SERVED[name])
                       for name, t in full.items()}

    # Once per job: both sides' metadata on every rank, then the plan.
    src, dst = m2n.gather_layouts(src=trainer_side, dst=server_side)
    refit = m2n.Refit(src, dst)

    for step in range(3):
        if rank in TRAINER:
            for t in model.values():
                t.to_local().add_(1.0)  # the optimizer's update
            refit.step(src=dict(source))
        else:
            refit.step(dst=engine)
        for t in full.values():
            t.add_(1.0)
        if rank in SERVER:
            for name, t in full.items():
                assert torch.equal(engine[name], distribute_tensor(t, serve_mesh, SERVED[name]).to_local()), name
    print(f"rank {rank}: refitted {len(SHAPES)} tensors {step + 1} times", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
