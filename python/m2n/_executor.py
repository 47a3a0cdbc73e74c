"""Executing a plan on torch tensors, over torch.distributed, sim or MPI."""

from __future__ import annotations

import datetime
from typing import Dict, List, Mapping, Optional

from . import _m2n
from ._layout import dtype_name
from ._plan import Binding, Plan

_ROLE_WORDS = {"src": "source", "dst": "destination"}


class TorchDistributedTransport:
    """Moves the messages with torch.distributed over `process_group`
    (default: the default group), whose ranks are the plan's: each step's
    sends and receives as one batch_isend_irecv. Gloo carries CPU tensors,
    NCCL CUDA tensors. `timeout` bounds each step's wait (default: the
    group's own timeout)."""

    def __init__(self, process_group=None, timeout: Optional[float] = None):
        import torch.distributed as dist

        self.group = process_group if process_group is not None else dist.group.WORLD
        self.rank = dist.get_rank(self.group)
        if self.rank < 0:
            raise ValueError(f"rank {dist.get_rank()} is not in the process group given; every rank of the refit is")
        self.world_size = dist.get_world_size(self.group)
        self.timeout = None if timeout is None else datetime.timedelta(seconds=timeout)
        self._native = _m2n.Transport.external(self.rank, self.world_size)

    def _run(self, executor) -> None:
        import torch.distributed as dist

        while (exchange := executor.step_next()) is not None:
            step, sends, receives = exchange
            try:
                ops = [dist.P2POp(dist.isend, t, group=self.group, group_peer=p) for p, t in sends]
                ops += [dist.P2POp(dist.irecv, t, group=self.group, group_peer=p) for p, t in receives]
                if ops:
                    for work in dist.batch_isend_irecv(ops):
                        if self.timeout is None:
                            work.wait()
                        else:
                            work.wait(self.timeout)
            except BaseException:
                # Completing with nothing moved ends the run, so that the
                # next one starts afresh with its agreement.
                try:
                    executor.step_complete(step, 0, 0)
                except _m2n.Error:
                    pass
                raise
            executor.step_complete(step, len(sends), len(receives))


class _NativeTransport:
    """A transport that moves the messages itself (sim, MPI, NCCL); it keeps
    `owner` (what holds its communicator) alive."""

    def __init__(self, native, owner=None):
        self._native = native
        self._owner = owner
        self.rank = native.rank
        self.world_size = native.world_size

    def set_timeout(self, seconds: float) -> None:
        """How long a rank waits on a peer before the group aborts."""
        self._native.set_timeout(seconds)

    @staticmethod
    def _run(executor) -> None:
        executor.run()


class SimWorld:
    """Every rank of a plan in this process, one thread per rank: for
    offline use and tests. Each rank's thread takes its transport."""

    def __init__(self, world_size: int):
        self._native = _m2n.SimWorld(world_size)
        self.world_size = world_size

    def transport(self, rank: int) -> _NativeTransport:
        return _NativeTransport(self._native.transport(rank))


def mpi_transport(comm=None) -> _NativeTransport:
    """m2n's MPI transport over an mpi4py communicator (default: COMM_WORLD);
    collective. Needs a runtime built with MPI and mpi4py over the same MPI."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD if comm is None else comm
    return _NativeTransport(_m2n.Transport.mpi(MPI._addressof(comm)))


def nccl_transport(process_group=None) -> _NativeTransport:
    """m2n's own NCCL transport on the communicator of a ProcessGroupNCCL
    (default: the default group) on the current CUDA device, for executors
    on that device: the runtime then posts the messages itself, on the
    executor's stream. Plan rank r is group rank r. Collective the first
    time, when the group's communicator is made."""
    import torch
    import torch.distributed as dist

    if not _m2n.HAVE_CUDA:
        raise ValueError("this m2n was built without CUDA; its NCCL transport needs it")
    if not torch.cuda.is_available():
        raise ValueError("m2n's NCCL transport needs a CUDA device, and torch sees none")
    group = process_group if process_group is not None else dist.group.WORLD
    device = torch.device("cuda", torch.cuda.current_device())
    try:
        backend = group._get_backend(device)
    except RuntimeError:
        backend = None
    if not hasattr(backend, "_comm_ptr"):
        raise ValueError(f"the process group has no ProcessGroupNCCL on {device}")
    # torch makes a group's communicator at its first collective.
    dist.barrier(group=group, device_ids=[device.index])
    return _NativeTransport(_m2n.Transport.nccl(backend._comm_ptr()), owner=group)


class Executor:
    """One rank's executor of a plan, binding torch tensors.

    ``run(src, dst)`` binds this rank's shards (by tensor name, the source
    shards it holds and the destination shards it fills) and runs the plan;
    every rank of the plan runs together. The tensors must be on `device`,
    contiguous, and of the plan's dtype and local shape. A problem with any
    rank's tensors fails every rank's run: that rank raises ValueError naming
    the tensor, the others m2n.Error naming that rank, and nothing hangs.

    On a CUDA device the run goes on the given stream, or the current one,
    and returns once its work is enqueued.
    """

    def __init__(self, plan: Plan, transport, *, device="cpu"):
        import torch

        if transport.world_size != plan.world_size:
            raise ValueError(
                f"the plan has {plan.world_size} ranks but the transport {transport.world_size}: "
                "the process group must be the refit's ranks"
            )
        self.plan = plan
        self.transport = transport
        self.rank = transport.rank
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.bindings: List[Binding] = plan.bindings(self.rank)
        self._held = {(b.name, b.role) for b in self.bindings}
        self._tensor_names = {t.name for t in plan.tensors}
        # CUDA executors by stream: a device's stream is fixed when it is made.
        self._natives: Dict[int, object] = {}

    def run(self, src: Optional[Mapping] = None, dst: Optional[Mapping] = None, *, stream=None) -> None:
        native = self._native(stream)
        given = {"src": dict(src or {}), "dst": dict(dst or {})}
        problems = [p for b in self.bindings if (p := self._bind(native, b, given[b.role].get(b.name)))]
        problems += self._unexpected(given)
        try:
            self._drive(native, stream)
        except _m2n.Error as error:
            if problems:
                raise ValueError("; ".join(problems)) from error
            raise
        if problems:
            raise ValueError("; ".join(problems))

    def stats(self, stream=None) -> dict:
        """What the last run did on this rank."""
        return self._native(stream).stats()

    def _native(self, stream):
        if self.device.type != "cuda":
            if not self._natives:
                self._natives[0] = _m2n.Executor(self.plan._native, self.transport._native)
            return self._natives[0]
        stream = self._stream(stream)
        native = self._natives.get(stream.cuda_stream)
        if native is None:
            if not _m2n.HAVE_CUDA:
                raise ValueError("this m2n was built without CUDA; executors on CUDA devices need it")
            device = _m2n.Device.cuda(self.device.index, stream.cuda_stream)
            native = _m2n.Executor(self.plan._native, self.transport._native, device)
            self._natives[stream.cuda_stream] = native
        return native

    def _stream(self, stream):
        import torch

        return stream if stream is not None else torch.cuda.current_stream(self.device)

    def _drive(self, native, stream) -> None:
        if self.device.type != "cuda":
            self.transport._run(native)
            return
        import torch

        # torch.distributed orders its work after the current stream's and
        # the stream after its receives: the executor's packs and unpacks
        # are on that stream too.
        with torch.cuda.stream(self._stream(stream)):
            self.transport._run(native)

    def _describe(self, b: Binding) -> str:
        return f"tensor {b.name!r} ({_ROLE_WORDS[b.role]} shard of rank {self.rank})"

    def _bind(self, native, b: Binding, tensor) -> Optional[str]:
        """Binds one shard; a problem leaves the shard unbound, which fails
        the run's agreement on every rank, and is returned."""
        import torch

        what = self._describe(b)
        problem = None
        if tensor is None:
            problem = f"{what} is missing"
        elif not isinstance(tensor, torch.Tensor):
            problem = f"{what} is a {type(tensor).__name__}, not a torch.Tensor"
        elif b.nbytes and tensor.device != self.device:
            problem = f"{what} is on {tensor.device}, expected {self.device}"
        elif b.nbytes and not tensor.is_contiguous():
            problem = f"{what} is not contiguous; pass tensor.contiguous() (or a contiguous copy to fill)"
        if problem is None:
            try:
                dtype = dtype_name(tensor.dtype)
            except ValueError as error:
                problem = f"{what}: {error}"
        if problem is None:
            try:
                native.bind(b.name, b.role, tensor.data_ptr(), dtype, list(tensor.shape))
                return None
            except _m2n.Error as error:
                # The runtime checks dtype and shape against the plan.
                return f"{what}: {_reason(error)} (torch dtype {tensor.dtype}, shape {list(tensor.shape)})"
        try:
            native.bind(b.name, b.role, 0, b.dtype, list(b.shape))
        except _m2n.Error:
            pass  # the failure wanted: the shard is unbound
        return problem

    def _unexpected(self, given) -> List[str]:
        """Tensors given that this rank does not hold in the plan."""
        problems = []
        for role, tensors in given.items():
            for name, tensor in tensors.items():
                if (name, role) in self._held:
                    continue
                if name not in self._tensor_names:
                    problems.append(f"tensor {name!r} is not in the plan")
                elif getattr(tensor, "numel", lambda: 0)() != 0:
                    problems.append(f"rank {self.rank} holds no {_ROLE_WORDS[role]} shard of tensor {name!r} in the plan")
        return problems


def _reason(error: Exception) -> str:
    """What the runtime found wrong with a binding, without its code,
    function and shard (which the caller names in its own words)."""
    text = str(error)
    for prefix in ("INVALID_ARGUMENT: ", "m2n_executor_bind: "):
        text = text.removeprefix(prefix)
    shard, _, reason = text.partition(": ")
    return reason if shard.startswith("tensor ") and reason else text
