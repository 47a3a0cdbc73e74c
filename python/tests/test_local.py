"""The package in one process: specs, layouts, compiles, plans, the plan
cache, and plans run with every rank in this process (sim)."""

import json
import os
import subprocess
import threading

import pytest
import torch
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.placement_types import _StridedShard

import m2n

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(TOP, "examples", "llama-mini.json")
M2N_TOOL = os.path.join(os.environ.get("M2N_BUILD_DIR", os.path.join(TOP, "build")), "bin", "m2n")


def two_sided_spec():
    src = {
        "w": m2n.TensorLayout.make(torch.float32, (10, 7), m2n.Mesh((2, 2), range(4)), [Shard(0), Shard(1)]),
        "b": m2n.TensorLayout.make("bf16", (5,), m2n.Mesh((2, 2), range(4)), ["R", "S(0)"]),
    }
    dst = {
        "w": m2n.TensorLayout.make("F32", (10, 7), [4, 5, 6], ["Shard(dim=1)"]),
        "b": m2n.TensorLayout.make(torch.bfloat16, (5,), [4, 5, 6], [Replicate()]),
    }
    return m2n.RefitSpec.from_layouts(src, dst, "two")


def test_spec_round_trips_m2ns_own_writer(tmp_path):
    # `m2n spec` writes the canonical form; RefitSpec gives back the same text.
    out = tmp_path / "llama.json"
    subprocess.run(
        [M2N_TOOL, "spec", "--model", "llama-3-8b", "--train", "fsdp8", "--gen", "dp2,tp4", "-o", str(out)], check=True
    )
    text = out.read_text()
    spec = m2n.RefitSpec.from_json(text)
    assert spec.to_json() == text
    assert m2n.RefitSpec.from_json(spec.to_json()) == spec
    spec.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == text


def test_spec_from_layouts():
    spec = two_sided_spec()
    data = json.loads(spec.to_json())
    assert [m["name"] for m in data["meshes"]] == ["src0", "dst0"]
    assert data["meshes"][1]["ranks"] == {"start": 4}
    w = data["tensors"][0]
    assert (w["dtype"], w["src"]["placements"], w["dst"]["placements"]) == ("F32", ["S(0)", "S(1)"], ["S(1)"])
    assert data["tensors"][1]["dtype"] == "BF16"
    assert spec.world_size == 7
    # The ranks of a larger group hold nothing, on a mesh of their own.
    wider = m2n.RefitSpec.from_layouts(
        {"w": m2n.TensorLayout.make("F32", (4,), [0], ["R"])}, {"w": m2n.TensorLayout.make("F32", (4,), [2], ["R"])},
        world_size=5,
    )
    assert wider.meshes["idle"].ranks == (3, 4) and m2n.compile(wider).world_size == 5


def test_spec_errors_name_the_tensor():
    text = open(EXAMPLE).read().replace('"S(1)"', '"S(9)"', 1)
    with pytest.raises(ValueError, match=r'tensors\[\d+\] \("[^"]+"\): .*placements'):
        m2n.RefitSpec.from_json(text, "bad.json")
    with pytest.raises(ValueError, match="tensor 'b' has no destination layout"):
        lay = m2n.TensorLayout.make("F32", (4,), [0], ["R"])
        m2n.RefitSpec.from_layouts({"a": lay, "b": lay}, {"a": lay})
    with pytest.raises(ValueError, match="tensor 'a': the source holds F32 \\[4\\], the destination F16 \\[4\\]"):
        m2n.RefitSpec.from_layouts({"a": lay}, {"a": m2n.TensorLayout.make("F16", (4,), [0], ["R"])})


def test_placements_refused_name_the_parameter():
    mesh = m2n.Mesh((2,), (0, 1))
    with pytest.raises(ValueError, match="parameter 'l.w': placements\\[0\\]: _StridedShard"):
        m2n.TensorLayout.make("F32", (4, 4), mesh, [_StridedShard(0, split_factor=2)], name="parameter 'l.w'")
    with pytest.raises(ValueError, match="parameter 'l.w': placements\\[0\\]: Partial"):
        m2n.TensorLayout.make("F32", (4, 4), mesh, [Partial()], name="parameter 'l.w'")
    with pytest.raises(ValueError, match="1 placements for a 2-D mesh"):
        m2n.TensorLayout.make("F32", (4, 4), m2n.Mesh((1, 2), (0, 1)), [Shard(0)], name="x")
    with pytest.raises(ValueError, match="invalid placement 'S\\(x\\)'"):
        m2n.TensorLayout.make("F32", (4, 4), mesh, ["S(x)"], name="x")
    # A negative dim counts from the end, as torch's does.
    assert m2n.TensorLayout.make("F32", (4, 4), mesh, [Shard(-1)]).placements == ("S(1)",)


def test_layouts_refuse_plain_tensors():
    with pytest.raises(ValueError, match="parameter 'weight' is not a DTensor"):
        m2n.layouts(torch.nn.Linear(2, 2))


def test_dtype_names():
    assert [m2n.dtype_name(n) for n in ("bf16", "BFloat16", "float", "fp8_e4m3")] == ["BF16", "BF16", "F32", "F8_E4M3"]
    assert m2n.dtype_name(torch.uint64) == "U64" and m2n.torch_dtype("half") == torch.float16
    with pytest.raises(ValueError, match="unknown dtype 'complex'"):
        m2n.dtype_name("complex")
    with pytest.raises(ValueError, match="torch.complex64 has no m2n equivalent"):
        m2n.dtype_name(torch.complex64)


def test_compile_and_plan_objects(tmp_path):
    spec = m2n.RefitSpec.load(EXAMPLE)
    plan = m2n.compile(spec, cache=None)
    assert plan.world_size == 12 and plan.summary.tensor_count == len(spec.tensors)
    assert plan.summary.wire_bytes > 0 and plan.summary.predicted_ns >= plan.summary.lower_bound_ns
    assert sum(r.send_bytes for r in plan.ranks) == sum(r.receive_bytes for r in plan.ranks)
    assert {t.name for t in plan.tensors} == {t.name for t in spec.tensors}
    assert "rank 0" in plan.disassemble(0)
    plan.save(tmp_path / "p.m2n")
    loaded = m2n.Plan.load(tmp_path / "p.m2n")
    assert loaded.summary == plan.summary and loaded.to_bytes() == plan.to_bytes()
    # The same options as `m2n compile`, to the byte.
    cli = tmp_path / "cli.m2n"
    subprocess.run([M2N_TOOL, "compile", EXAMPLE, "-o", str(cli), "--staging-bytes", "65536", "--no-relay"], check=True)
    assert m2n.compile(spec, staging_bytes=65536, relay=False, cache=None).to_bytes() == cli.read_bytes()


def test_compile_errors_carry_the_diagnostics():
    spec = m2n.RefitSpec.load(EXAMPLE)
    with pytest.raises(m2n.Error, match="staging_bytes must be positive"):
        m2n.compile(spec, staging_bytes=0, cache=None)
    with pytest.raises(m2n.Error, match="nonexistent.json: error: cannot read the file"):
        m2n.compile(spec, topology="/nonexistent.json", cache=None)


def test_corrupt_plan_is_refused(tmp_path):
    data = bytearray(m2n.compile(two_sided_spec()).to_bytes())
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(m2n.Error, match="DATA_LOSS"):
        m2n.Plan(bytes(data))


def test_plan_cache(tmp_path):
    cache = m2n.PlanCache(capacity=1, directory=str(tmp_path))
    spec = two_sided_spec()
    first = m2n.compile(spec, cache=cache)
    assert m2n.compile(spec, cache=cache) is first and cache.hits == 1
    other = m2n.compile(spec, cache=cache, staging_bytes=4096)
    assert other is not first and other.summary.staging_budget == 4096
    assert len(list(tmp_path.glob("*.m2n"))) == 2
    # A new cache over the same directory loads, not compiles.
    again = m2n.PlanCache(directory=str(tmp_path))
    assert m2n.compile(spec, cache=again).to_bytes() == first.to_bytes()


def shards_by_plan(plan, rank, globals_):
    """Each binding's box of the global tensors, as the plan places it."""
    out = {"src": {}, "dst": {}}
    for b in plan.bindings(rank):
        index = tuple(slice(o, o + s) for o, s in zip(b.offset, b.shape))
        g = globals_[b.name]
        out[b.role][b.name] = g[index].clone() if b.role == "src" else torch.zeros_like(g[index])
    return out


def test_sim_world_runs_every_rank_in_this_process():
    spec = two_sided_spec()
    plan = m2n.compile(spec)
    generator = torch.Generator().manual_seed(3)
    globals_ = {"w": torch.randn(10, 7, generator=generator), "b": torch.randn(5, generator=generator).bfloat16()}
    world = m2n.SimWorld(plan.world_size)
    tensors = [shards_by_plan(plan, r, globals_) for r in range(plan.world_size)]
    errors = []

    def rank(r):
        try:
            m2n.Executor(plan, world.transport(r)).run(tensors[r]["src"], tensors[r]["dst"])
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(plan.world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    for r in range(4, 7):
        for b in plan.bindings(r):
            index = tuple(slice(o, o + s) for o, s in zip(b.offset, b.shape))
            assert torch.equal(tensors[r]["dst"][b.name], globals_[b.name][index])


def test_transport_of_wrong_size():
    plan = m2n.compile(two_sided_spec())
    with pytest.raises(ValueError, match="the plan has 7 ranks but the transport 3"):
        m2n.Executor(plan, m2n.SimWorld(3).transport(0))


def test_dtensor_ref():
    ref = m2n.DTensorRef(torch.zeros(2, 3, dtype=torch.int16), [4, 3])
    assert (ref.dtype, ref.device, ref.global_shape) == (torch.int16, torch.device("cpu"), (4, 3))
    with pytest.raises(ValueError, match="needs its dtype"):
        m2n.DTensorRef(None, [4, 3])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where there is no GPU")
def test_nccl_transport_needs_a_gpu():
    with pytest.raises(ValueError, match="NCCL transport needs"):
        m2n.nccl_transport()
