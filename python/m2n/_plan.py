"""Compiling specs into plans, the plan cache, and plans as Python objects."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import os
import threading
from typing import List, Optional, Tuple, Union

from . import _m2n
from ._spec import RefitSpec


@dataclasses.dataclass(frozen=True)
class PlanSummary:
    """The plan's header: its size and the compiler's figures for it."""

    version: Tuple[int, int]
    world_size: int
    tensor_count: int
    step_count: int
    staging_budget: int
    content_hash: int
    file_size: int
    wire_bytes: int
    local_copy_bytes: int
    message_count: int
    predicted_ns: int
    lower_bound_ns: int


@dataclasses.dataclass(frozen=True)
class RankSummary:
    """One rank's share of the plan."""

    rank: int
    binding_count: int
    instruction_count: int
    staging_bytes: int
    send_bytes: int
    receive_bytes: int


@dataclasses.dataclass(frozen=True)
class PlanTensor:
    name: str
    dtype: str
    shape: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Binding:
    """A shard that a rank binds: the box [offset, offset + shape) of a
    tensor, as its source ("src") or its destination ("dst")."""

    name: str
    role: str
    dtype: str
    offset: Tuple[int, ...]
    shape: Tuple[int, ...]
    nbytes: int


class Plan:
    """A compiled, verified plan: what every rank of a refit executes."""

    def __init__(self, data: bytes, *, trusted: bool = False):
        """Loads plan bytes; the runtime verifies them unless `trusted` (a
        plan that this process compiled, which the compiler verified)."""
        self._data = bytes(data)
        self._native = _m2n.Plan(self._data, trusted)
        self.summary = PlanSummary(**self._native.info())
        self.tensors: List[PlanTensor] = [PlanTensor(n, d, tuple(s)) for n, d, s in self._native.tensors()]

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Plan":
        with open(path, "rb") as f:
            return cls(f.read())

    def save(self, path: Union[str, os.PathLike]) -> None:
        with open(path, "wb") as f:
            f.write(self._data)

    def to_bytes(self) -> bytes:
        return self._data

    @property
    def world_size(self) -> int:
        return self.summary.world_size

    def rank(self, rank: int) -> RankSummary:
        return RankSummary(rank, **self._native.rank_info(rank))

    @property
    def ranks(self) -> List[RankSummary]:
        return [self.rank(r) for r in range(self.world_size)]

    def bindings(self, rank: int) -> List[Binding]:
        """Every shard `rank` binds, in plan order."""
        out = []
        for tensor, role, offset, shape, nbytes in self._native.bindings(rank):
            t = self.tensors[tensor]
            out.append(Binding(t.name, role, t.dtype, tuple(offset), tuple(shape), nbytes))
        return out

    def disassemble(self, rank: int = -1) -> str:
        """The plan as text (docs/plan-format.md): every rank, or one."""
        return self._native.disassemble(rank)

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"Plan({s.world_size} ranks, {s.tensor_count} tensors, {s.step_count} steps, "
            f"{s.message_count} messages, {s.wire_bytes} wire bytes)"
        )


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """The options of `m2n compile`, with its defaults."""

    bucket_bytes: int = 0
    staging_bytes: int = 1 << 30
    topology: str = ""
    relay: bool = True
    exchange: bool = True


class PlanCache:
    """Plans by the content of their spec and options: in memory (the most
    recent `capacity`), and in `directory` when one is given, so that a job
    that restarts need not compile again."""

    def __init__(self, capacity: int = 64, directory: Optional[str] = None):
        self.capacity = capacity
        self.directory = directory
        self._plans: "collections.OrderedDict[str, Plan]" = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(spec: RefitSpec, options: CompileOptions) -> str:
        text = spec.to_json() + repr(dataclasses.astuple(options))
        if options.topology:
            with open(options.topology, "rb") as f:
                text += f.read().hex()
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, spec: RefitSpec, options: CompileOptions) -> Plan:
        key = self.key(spec, options)
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                self.hits += 1
                return plan
        self.misses += 1
        plan = self._load(key) or _compile_uncached(spec, options)
        self._store(key, plan)
        return plan

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()

    def _path(self, key: str) -> Optional[str]:
        return os.path.join(self.directory, key + ".m2n") if self.directory else None

    def _load(self, key: str) -> Optional[Plan]:
        path = self._path(key)
        return Plan.load(path) if path and os.path.exists(path) else None

    def _store(self, key: str, plan: Plan) -> None:
        with self._lock:
            self._plans[key] = plan
            while len(self._plans) > self.capacity:
                self._plans.popitem(last=False)
        path = self._path(key)
        if path and not os.path.exists(path):
            os.makedirs(self.directory, exist_ok=True)
            # Through a temporary file, so that a reader never sees half.
            temp = f"{path}.{os.getpid()}.tmp"
            plan.save(temp)
            os.replace(temp, path)


#: The cache that m2n.compile uses unless told otherwise.
default_cache = PlanCache()


def _compile_uncached(spec: RefitSpec, options: CompileOptions) -> Plan:
    data = _m2n.compile(
        spec.to_json(),
        spec.name,
        options.bucket_bytes,
        options.staging_bytes,
        options.topology,
        options.relay,
        options.exchange,
    )
    return Plan(data, trusted=True)


def compile(
    spec: Union[RefitSpec, str],
    *,
    bucket_bytes: int = 0,
    staging_bytes: int = 1 << 30,
    topology: str = "",
    relay: bool = True,
    exchange: bool = True,
    cache: Optional[PlanCache] = default_cache,
) -> Plan:
    """Compiles a spec (a RefitSpec or its JSON text) into a plan, with the
    options of `m2n compile`: bucket_bytes (--bucket-bytes, 0: from the cost
    model), staging_bytes (--staging-bytes), topology (--topology, a JSON
    file), relay (False: --no-relay), exchange (False: --no-exchange). A
    plan of the same spec and options comes from `cache` (None: always
    compile). Raises m2n.Error with the compiler's diagnostics."""
    if isinstance(spec, str):
        spec = RefitSpec.from_json(spec)
    options = CompileOptions(bucket_bytes, staging_bytes, str(topology), relay, exchange)
    if cache is None:
        return _compile_uncached(spec, options)
    return cache.get(spec, options)
