"""m2n.Refit, the trainer-side weight source, and the one-tensor drop-in."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple

from ._executor import Executor, TorchDistributedTransport
from ._layout import Mesh, TensorLayout, as_mesh, layouts
from ._plan import PlanCache, compile, default_cache
from ._spec import RefitSpec


def _local(tensor):
    """The local shard of a DTensor; any other tensor as it is."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def _local_tensors(tensors) -> Dict[str, Any]:
    if tensors is None:
        return {}
    if hasattr(tensors, "named_parameters"):
        tensors = dict(list(tensors.named_parameters()) + list(tensors.named_buffers()))
    return {name: _local(t) for name, t in tensors.items()}


def gather_layouts(
    src: Optional[Mapping[str, TensorLayout]] = None,
    dst: Optional[Mapping[str, TensorLayout]] = None,
    process_group=None,
) -> Tuple[Dict[str, TensorLayout], Dict[str, TensorLayout]]:
    """Both sides' metadata on every rank, from what each rank knows: each
    passes the layouts of what it holds (a trainer its src, a server its
    dst, from m2n.layouts or its own TensorLayouts). Collective over the
    group. Ranks that describe one tensor differently fail alike."""
    import torch.distributed as dist

    mine = (dict(src or {}), dict(dst or {}))
    gathered = [None] * dist.get_world_size(process_group)
    dist.all_gather_object(gathered, mine, group=process_group)
    sides: Tuple[Dict[str, TensorLayout], Dict[str, TensorLayout]] = ({}, {})
    for rank, theirs in enumerate(gathered):
        for side, word, merged in zip(theirs, ("source", "destination"), sides):
            for name, layout in side.items():
                if merged.setdefault(name, layout) != layout:
                    raise ValueError(
                        f"ranks describe the {word} layout of tensor {name!r} differently: "
                        f"{merged[name]} and, on rank {rank}, {layout}"
                    )
    return sides


class Refit:
    """One job's refit: compiled once from both sides' metadata, then run at
    every training step on each rank's local tensors.

        refit = m2n.Refit(src_layouts, dst_layouts, process_group=group)
        ...
        refit.step(src=model, dst=engine_weights)   # every rank of the group

    `src` and `dst` map tensor names to layouts (m2n.TensorLayout; see
    m2n.layouts and m2n.gather_layouts). The process group is the refit's
    ranks (default: the default group); gloo moves CPU tensors, NCCL CUDA
    tensors (device="cuda"); ranks of the group on neither side take part
    holding nothing. Other keywords are m2n.compile's options.
    A `transport` given (m2n.SimWorld's, m2n.mpi_transport()) replaces the
    process group.
    """

    def __init__(
        self,
        src: Mapping[str, TensorLayout],
        dst: Mapping[str, TensorLayout],
        *,
        process_group=None,
        transport=None,
        device="cpu",
        name: str = "refit",
        timeout: Optional[float] = None,
        cache: Optional[PlanCache] = default_cache,
        **compile_options,
    ):
        if transport is None:
            transport = TorchDistributedTransport(process_group, timeout)
        self.spec = RefitSpec.from_layouts(src, dst, name, transport.world_size)
        self.plan = compile(self.spec, cache=cache, **compile_options)
        self.executor = Executor(self.plan, transport, device=device)

    @property
    def rank(self) -> int:
        return self.executor.rank

    def step(self, src=None, dst=None, *, stream=None) -> None:
        """Moves the weights: `src` the source shards this rank holds, `dst`
        the destination shards it fills, each a mapping of names to local
        tensors (DTensors are taken by their local shard) or a module."""
        self.executor.run(_local_tensors(src), _local_tensors(dst), stream=stream)

    def stats(self) -> dict:
        """What the last step did on this rank."""
        return self.executor.stats()


class WeightSource:
    """The trainer's side of a refit, from a module's DTensor parameters (or
    a mapping of names to DTensors): each parameter's layout, and its local
    shard. Any mesh, uneven and empty shards, several sharded mesh axes and
    fully replicated parameters alike."""

    def __init__(self, source, process_group=None):
        self._tensors = dict(source.named_parameters()) if hasattr(source, "named_parameters") else dict(source)
        self._layouts = layouts(self._tensors, process_group)

    def metadata(self) -> Dict[str, TensorLayout]:
        """Every parameter's layout by name: what the server needs to know."""
        return dict(self._layouts)

    def mesh(self, name: Optional[str] = None) -> Mesh:
        """The mesh of parameter `name`, or, without a name, the one mesh of
        every parameter (ValueError when they differ)."""
        if name is not None:
            return self._layouts[name].mesh
        meshes = {layout.mesh for layout in self._layouts.values()}
        if len(meshes) != 1:
            raise ValueError(f"the parameters lie on {len(meshes)} meshes; ask for one parameter's mesh by name")
        return meshes.pop()

    def __iter__(self) -> Iterator[Tuple[str, Any]]:
        """(name, local shard) per parameter, each shard contiguous."""
        for name, tensor in self._tensors.items():
            yield name, _local(tensor).detach().contiguous()

    def __len__(self) -> int:
        return len(self._tensors)


@dataclasses.dataclass
class DTensorRef:
    """A rank's part of a distributed tensor: its local shard (None where
    the rank holds none), and the tensor's global shape; dtype and device
    default to the local shard's."""

    local_tensor: Any
    global_shape: Sequence[int]
    dtype: Any = None
    device: Any = None

    def __post_init__(self):
        self.global_shape = tuple(int(s) for s in self.global_shape)
        if self.local_tensor is not None:
            self.dtype = self.dtype if self.dtype is not None else self.local_tensor.dtype
            self.device = self.device if self.device is not None else self.local_tensor.device
        if self.dtype is None:
            raise ValueError("DTensorRef without a local tensor needs its dtype")


_XFER_TENSOR = "dtensor"
# Executors of one-tensor plans, by the plan's spec, group and device.
_xfer_executors: Dict[Tuple[str, int, str], Executor] = {}
_xfer_lock = threading.Lock()


def _ref(tensor, what: str) -> Optional[DTensorRef]:
    if tensor is None or isinstance(tensor, DTensorRef):
        return tensor
    if hasattr(tensor, "to_local"):
        return DTensorRef(tensor.to_local(), tensor.shape)
    raise TypeError(f"{what} must be an m2n.DTensorRef, a DTensor or None, not {type(tensor).__name__}")


def _group_device(process_group) -> str:
    """Where a rank that holds nothing of a tensor keeps its (empty) side:
    on the device that the group's backend moves."""
    import torch.distributed as dist

    return "cuda" if dist.get_backend(process_group) == "nccl" else "cpu"


def xferdtensor(
    src_tensor,
    src_mesh,
    src_placement,
    dst_tensor,
    dst_mesh,
    dst_placement,
    process_group,
    stream=None,
):
    """Moves one tensor from its source layout to its destination layout,
    as DTensor would redistribute it between the two meshes: every rank of
    `process_group` calls it, with its DTensorRef (or DTensor) on each side,
    None on a side where it holds nothing. The destination shard is filled
    in place and returned. A one-tensor plan is compiled once per distinct
    pair of layouts."""
    import torch.distributed as dist

    src = _ref(src_tensor, "src_tensor")
    dst = _ref(dst_tensor, "dst_tensor")
    if src is None and dst is None:
        raise ValueError("xferdtensor needs the global shape and dtype: give src_tensor or dst_tensor")
    # A side without a ref takes the other's dtype and shape; two refs that
    # disagree are refused by the spec.
    src_ref, dst_ref = src or dst, dst or src
    devices = [ref.device for ref in (src, dst) if ref is not None and ref.device is not None]
    device = devices[0] if devices else _group_device(process_group)
    layout = {
        "src": TensorLayout.make(
            src_ref.dtype, src_ref.global_shape, as_mesh(src_mesh, process_group), src_placement, name="src_placement"
        ),
        "dst": TensorLayout.make(
            dst_ref.dtype, dst_ref.global_shape, as_mesh(dst_mesh, process_group), dst_placement, name="dst_placement"
        ),
    }
    world_size = dist.get_world_size(process_group)
    spec = RefitSpec.from_layouts(
        {_XFER_TENSOR: layout["src"]}, {_XFER_TENSOR: layout["dst"]}, "xferdtensor", world_size
    )
    key = (spec.to_json(), id(process_group), str(device))
    with _xfer_lock:
        executor = _xfer_executors.get(key)
    if executor is None:
        plan = compile(spec)
        executor = Executor(plan, TorchDistributedTransport(process_group), device=device)
        with _xfer_lock:
            _xfer_executors[key] = executor
    given = {"src": src, "dst": dst}
    tensors = {
        role: {_XFER_TENSOR: ref.local_tensor}
        for role, ref in given.items()
        if ref is not None and ref.local_tensor is not None
    }
    executor.run(tensors.get("src"), tensors.get("dst"), stream=stream)
    return dst.local_tensor if dst is not None else None
