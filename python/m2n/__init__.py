"""m2n: compiled weight refits between differently sharded groups of ranks.

The compiler and the runtime run in this process (the native module
m2n._m2n). Layouts come from torch DeviceMesh and DTensor placements or
plain values; a RefitSpec is compiled into a Plan; an Executor, or a Refit
that holds both, runs it on torch tensors over torch.distributed, sim or MPI.
See docs/python.md.
"""

from ._m2n import Error
from ._executor import Executor, SimWorld, TorchDistributedTransport, mpi_transport, nccl_transport
from ._layout import Mesh, TensorLayout, dtype_name, layouts, torch_dtype
from ._plan import (
    Binding,
    CompileOptions,
    Plan,
    PlanCache,
    PlanSummary,
    PlanTensor,
    RankSummary,
    compile,
    default_cache,
)
from ._refit import DTensorRef, Refit, WeightSource, gather_layouts, xferdtensor
from ._spec import RefitSpec, TensorSpec

__all__ = [
    "Binding",
    "CompileOptions",
    "DTensorRef",
    "Error",
    "Executor",
    "Mesh",
    "Plan",
    "PlanCache",
    "PlanSummary",
    "PlanTensor",
    "RankSummary",
    "Refit",
    "RefitSpec",
    "SimWorld",
    "TensorLayout",
    "TensorSpec",
    "TorchDistributedTransport",
    "WeightSource",
    "compile",
    "default_cache",
    "dtype_name",
    "gather_layouts",
    "layouts",
    "mpi_transport",
    "nccl_transport",
    "torch_dtype",
    "xferdtensor",
]
