"""Tracing the example programs (tests/trace/programs) with fake tensors and a fake process group: the lowered
op kinds, shapes, FLOPs and collective sizes against hand computation, at 1, 2 and 8 ranks."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from rooflib.compute import gemm_flops  # noqa: E402
from rooflib.program import Program  # noqa: E402
from rooflib.trace import TraceError, capture_trace, load_target, trace_program  # noqa: E402

from .conftest import target  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Please use.*:FutureWarning")
WORLDS = [1, 2, 8]


def traced(spec: str, inputs: str = "inputs", *, world: int, **params: Any) -> Program:
    path = spec.split(":")[0]
    return trace_program(load_target(target(spec)), load_target(target(f"{path}:{inputs}")), world=world,
                         params=params)  # fmt: skip


def shape_params(op: Any) -> dict[str, Any]:
    """An op's params less ``host_calls`` (the views before it, a host cost only) and the L2 ones
    (tests/trace/test_residency.py checks those)."""
    return {k: v for k, v in op.params.items() if k != "host_calls" and not k.startswith("l2_")}


def kinds(p: Program) -> list[str]:
    return [op.kind for op in p.ops]


@pytest.mark.parametrize("world", WORLDS)
def test_tp_mlp(world: int) -> None:
    t, h, f = 512, 1024, 4096
    p = traced("tp_mlp.py:tp_mlp", world=world, t=t, h=h, f=f)
    assert kinds(p) == ["gemm", "elementwise", "gemm", "collective"]
    up, gelu, down, ar = (dict(op.params) for op in p.ops)
    assert (up["m"], up["n"], up["k"], up["dtype"]) == (t, f // world, h, "bf16")
    assert gemm_flops(up["m"], up["n"], up["k"]) == 2 * t * h * f / world
    assert (down["m"], down["n"], down["k"]) == (t, h, f // world)
    assert gelu["elements"] == t * f // world and gelu["flops_per_element"] == 9.0
    assert ar == {"op": "all_reduce", "bytes": t * h * 2}
    assert p.world == world and p.name == "tp_mlp" and all(op.stream == "compute" for op in p.ops)


@pytest.mark.parametrize("world", WORLDS)
def test_sp_attention(world: int) -> None:
    t, heads, kv, d = 1024, 16, 8, 64
    p = traced("sp_attention.py:sp_attention", world=world, t=t, n_heads=heads, n_kv=kv, head_dim=d)
    h = heads * d
    assert kinds(p) == ["collective", "gemm", "attention", "gemm", "collective"]
    ag, qkv, attn, out, rs = (shape_params(op) for op in p.ops)
    local_heads, local_kv = heads // world, max(1, kv // world)
    assert ag == {"op": "all_gather", "bytes": t * h * 2}  # the gathered output
    assert (qkv["m"], qkv["n"], qkv["k"]) == (t, (local_heads + 2 * local_kv) * d, h)
    assert attn == {"batch": 1, "heads": local_heads, "seq_q": t, "seq_kv": t, "head_dim": d,
                    "kv_heads": local_kv, "causal": True, "dtype": "bf16"}  # fmt: skip
    assert (out["m"], out["n"], out["k"]) == (t, h, local_heads * d)
    assert rs == {"op": "reduce_scatter", "bytes": t * h * 2}  # the input


@pytest.mark.parametrize("world", WORLDS)
def test_moe_dispatch_variable_splits(world: int) -> None:
    t, h, top_k, f = 256, 512, 2, 384
    module = load_target(target("moe_dispatch.py:splits")).__globals__
    for rank in sorted({0, world - 1}):
        send, recv = module["splits"](rank, world, t * top_k)
        p = trace_program(load_target(target("moe_dispatch.py:moe_dispatch")),
                          load_target(target("moe_dispatch.py:inputs")), world=world, rank=rank,
                          params={"t": t, "h": h, "top_k": top_k, "f": f})  # fmt: skip
        a2a = [op for op in p.ops if op.kind == "collective"]
        assert [op.params["op"] for op in a2a] == ["all_to_all", "all_to_all"]
        assert a2a[0].params["bytes"] == max(sum(send), sum(recv)) * h * 2
        assert a2a[1].params["bytes"] == max(sum(send), sum(recv)) * f * 2
        expert = [op for op in p.ops if op.kind == "gemm"][1]
        assert (expert.params["m"], expert.params["n"], expert.params["k"]) == (sum(recv), f, h)
        assert {"sort", "index", "norm"} <= set(kinds(p))


def test_elementwise_chain() -> None:
    rows, cols = 256, 1024
    p = traced("elementwise_chain.py:chain", world=1, rows=rows, cols=cols)
    assert [op.name for op in p.ops] == ["aten.add", "aten.silu", "aten.mul", "aten.gt", "aten.zeros_like",
                                         "aten.where", "aten.exp", "aten._to_copy"]  # fmt: skip
    assert kinds(p) == ["elementwise"] * 7 + ["copy"]
    assert all(op.params["elements"] == rows * cols for op in p.ops[:7])
    assert p.ops[0].params["reads"] == 1  # the bias is a row, broadcast
    assert p.ops[-1].params["bytes"] == rows * cols * 3  # bf16 in, fp32 out


def test_router_softmax_topk_and_one_sync() -> None:
    t, experts, k = 1024, 64, 8
    p = traced("router.py:router", world=1, t=t, experts=experts, top_k=k)
    assert kinds(p)[:2] == ["norm", "sort"] and kinds(p)[-1] == "sync"
    assert shape_params(p.ops[0]) == {"op": "softmax", "rows": t, "cols": experts, "dtype": "fp32"}
    assert dict(p.ops[1].params) == {"elements": t * experts, "dtype": "fp32"}
    assert kinds(p).count("sync") == 1  # .item() then .tolist(): the host waits once
    assert "index" in kinds(p)  # scatter_add_ of the counts


@pytest.mark.parametrize("world", WORLDS)
def test_vocab_parallel_cross_entropy(world: int) -> None:
    t, h, v = 256, 512, 32768
    p = traced("vocab_ce.py:vocab_parallel_cross_entropy", world=world, t=t, h=h, v=v)
    head = p.ops[0]
    assert head.kind == "gemm" and (head.params["m"], head.params["n"], head.params["k"]) == (t, v // world, h)
    ars = [op for op in p.ops if op.kind == "collective"]
    assert [(op.params["op"], op.params["bytes"]) for op in ars] == [("all_reduce", t * 4)] * 3
    assert kinds(p).count("reduction") == 3  # amax, sum, mean


def test_plain_cross_entropy() -> None:
    t, h, v = 256, 512, 32768
    p = traced("vocab_ce.py:cross_entropy", world=1, t=t, h=h, v=v, parallel=0)
    assert kinds(p) == ["gemm", "copy", "norm", "reduction"]
    assert shape_params(p.ops[2]) == {"op": "softmax", "rows": t, "cols": v, "dtype": "fp32"}
    # the softmax reads the fp32 logits the cast just wrote (half its bytes) and writes into a reused block (the
    # other half) while one call touches less than an L2 (rooflib.trace.residency)
    l2 = {k: v for k, v in p.ops[2].params.items() if k.startswith("l2_")}
    assert l2["l2_warm"] == l2["l2_warm_out"] == 0.5 and l2["l2_reuse"] == 0
    assert {op.params["l2_reuse_out"] for op in p.ops[1:3]} == {l2["l2_reuse_out"]} and l2["l2_reuse_out"] > 0
    assert p.ops[3].name == "aten.nll_loss_forward" and p.ops[3].params["elements"] == t


def test_async_all_reduce_and_side_stream() -> None:
    t, h = 256, 512
    p = traced("streams.py:overlapped", world=8, t=t, h=h)
    assert [(op.name, op.stream) for op in p.ops] == [
        ("c10d.allreduce_", "comm"), ("aten.mm", "compute"), ("aten.mul", "stream1"), ("aten.add", "compute")
    ]  # fmt: skip
    assert p.ops[2].deps == (1,)  # the side stream waited for the GEMM
    assert set(p.ops[3].deps) == {0, 2}  # after work.wait() and wait_stream


def test_functional_collectives() -> None:
    t, h, world = 256, 512, 4
    p = trace_program(load_target(target("streams.py:functional")), load_target(target("streams.py:functional_inputs")),
                      world=world, params={"t": t, "h": h})  # fmt: skip
    assert [(op.kind, op.params.get("op"), op.params.get("bytes")) for op in p.ops] == [
        ("collective", "all_gather", t * h * 2), ("gemm", None, None), ("collective", "reduce_scatter", t * h * 2)
    ]  # fmt: skip


def test_point_to_point() -> None:
    t, h = 128, 256
    ring = traced("p2p.py:ring_exchange", "ring_inputs", world=4, t=t, h=h)
    assert [(op.kind, shape_params(op)) for op in ring.ops] == [("send_recv", {"bytes": t * h * 2, "offset": 1})]
    stage = traced("p2p.py:pipeline_send", world=4, t=t, h=h)
    assert kinds(stage) == ["gemm", "send_recv"] and stage.ops[1].params["offset"] == 1


def test_cuda_device_host_copies_and_syncs() -> None:
    def program(x: Any) -> Any:
        y = torch.zeros(16, 16, device="cuda") + x.cuda()  # a fill and an add (x is on the GPU already)
        ids = torch.tensor([0, 3], device=torch.device("cuda", 0))  # an H2D copy
        y = y.to("cuda:0")[ids]
        torch.cuda.synchronize()
        return y.cpu()  # D2H and the host waits

    def inputs(rank: int, world: int, device: Any) -> tuple[Any]:
        return (torch.ones(16, 16),)  # made without a device: on the meta device, the GPU's

    p = trace_program(program, inputs, world=1)
    assert [(op.name, op.kind) for op in p.ops] == [
        ("aten.zeros", "elementwise"), ("aten.add", "elementwise"), ("aten._to_copy", "copy"), ("aten.index", "index"), ("cuda.synchronize", "sync"), ("aten._to_copy", "copy"), ("aten._to_copy", "sync"),
    ]  # fmt: skip


def test_module_cuda_in_inputs() -> None:
    def inputs(rank: int, world: int, device: Any) -> tuple[Any, Any]:
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU()).cuda()
        return model, torch.randn(32, 64, device=device)

    p = trace_program(lambda model, x: model(x), inputs, world=1)
    assert kinds(p) == ["gemm", "elementwise"] and p.ops[0].name == "aten.addmm"
    assert p.ops[0].params["dtype"] == "fp32"


def test_tf32_matmul_precision() -> None:
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        p = trace_program(lambda a: a @ a, lambda r, w, d: (torch.randn(64, 64, device=d),), world=1)
    finally:
        torch.set_float32_matmul_precision(old)
    assert p.ops[0].params["dtype"] == "tf32"


def test_more_collectives_and_subgroups() -> None:
    def program(x: Any) -> None:
        world = dist.get_world_size()
        pair = dist.new_group([0, 1])
        dist.all_reduce(x, group=pair)
        dist.all_gather([torch.empty_like(x) for _ in range(world)], x)
        dist.reduce_scatter(x, [x.clone() for _ in range(world)])
        dist.all_to_all([torch.empty_like(x) for _ in range(world)], [x for _ in range(world)])
        dist.broadcast(x, src=0)
        dist.reduce(x, dst=0)
        work = dist.all_reduce(x, group=pair, async_op=True)
        y = x * 2
        work.wait()
        dist.barrier()
        return y

    def inputs(rank: int, world: int, device: Any) -> tuple[Any]:
        return (torch.randn(64, 32, device=device, dtype=torch.bfloat16),)

    p = trace_program(program, inputs, world=4)
    comm = [(op.params["op"], op.params["bytes"], op.params.get("group"), op.stream)
            for op in p.ops if op.kind == "collective"]  # fmt: skip
    b = 64 * 32 * 2
    assert comm == [
        ("all_reduce", b, (0, 1), "compute"), ("all_gather", 4 * b, None, "compute"),
        ("reduce_scatter", 4 * b, None, "compute"), ("all_to_all", 4 * b, None, "compute"),
        ("broadcast", b, None, "compute"), ("reduce", b, None, "compute"), ("all_reduce", b, (0, 1), "comm.1"),
        ("all_reduce", 4.0, None, "compute"),
    ]  # fmt: skip
    assert kinds(p)[-1] == "sync"


def test_capture_records_shapes_dtypes_and_strides() -> None:
    def program(x: Any) -> Any:
        return x.t().contiguous()

    trace = capture_trace(program, lambda r, w, d: (torch.randn(8, 16, device=d, dtype=torch.float16),), world=1)
    t, clone = trace.calls
    assert (t.name, "view" in t.tags, t.outputs[0].shape, t.outputs[0].stride) == ("aten.t", True, (16, 8), (1, 16))
    assert clone.name == "aten.clone" and clone.inputs[0].stride == (1, 16) and clone.outputs[0].stride == (8, 1)
    assert clone.outputs[0].dtype == "float16" and clone.outputs[0].device == "gpu"
    assert trace.source.endswith("test_capture.py:test_capture_records_shapes_dtypes_and_strides.<locals>.program")


def test_data_dependent_shapes_take_their_upper_bound() -> None:
    p = traced("bad.py:bounded", world=1, n=16)
    trace = capture_trace(load_target(target("bad.py:bounded")), load_target(target("bad.py:inputs")), world=1)
    assert any("upper bound" in note for note in trace.notes)
    index = [op for op in p.ops if op.kind == "index"]
    assert index and index[0].params["bytes"] == 16 * 16 * 4  # every element selected


def test_data_dependent_without_a_bound_is_an_error() -> None:
    with pytest.raises(TraceError, match="output_size="):
        traced("bad.py:data_dependent", world=1)


def test_process_group_is_released() -> None:
    traced("tp_mlp.py:tp_mlp", world=2, t=8, h=16, f=32)
    assert not dist.is_initialized()
    assert torch.cuda.Stream.__module__.startswith("torch")


def test_program_calling_init_process_group_is_fine() -> None:
    def program(x: Any) -> Any:
        dist.init_process_group("nccl")
        dist.all_reduce(x)
        dist.destroy_process_group()
        return x

    p = trace_program(program, lambda r, w, d: (torch.randn(4, device=d),), world=2)
    assert kinds(p) == ["collective"]


def test_grad_mode_entries_are_host_work_of_the_next_op() -> None:
    p = traced("elementwise_chain.py:chain_no_grad", world=1, rows=64, cols=128)
    assert [op.name for op in p.ops] == ["aten.add", "aten.silu", "aten.mul"]
    assert p.ops[0].params["host_extra"] == ("python.no_grad",)  # the decorator, before the first op
    assert p.ops[2].params["host_extra"] == ("python.no_grad",)  # enable_grad inside: one more entry
    assert "host_extra" not in p.ops[1].params
    plain = traced("elementwise_chain.py:chain", world=1, rows=64, cols=128)
    assert all("host_extra" not in op.params for op in plain.ops)


def test_device_tensors_say_they_are_on_the_gpu() -> None:
    """Code that branches on ``x.is_cuda`` takes its GPU path (PKB's GNN all-to-alls: the list form there, a
    concatenation, the single-tensor form and copies back otherwise)."""

    def program(x: Any) -> Any:
        host = torch.ones(4)
        assert not host.is_cuda
        return x * 2 if x.is_cuda else torch.cat([x, x])

    trace = capture_trace(program, lambda r, w, d: (torch.randn(8, 16, device=d),), world=1)
    names = [c.name for c in trace.calls]
    assert "aten.mul" in names and "aten.cat" not in names
