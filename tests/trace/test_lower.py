"""Lowering hand-built traces: kinds, shapes, bytes, streams and dependencies (no torch needed)."""

from __future__ import annotations

import pytest

from rooflib.program import Program
from rooflib.trace import Call, Group, lower
from rooflib.trace.records import TensorMeta

from .conftest import call, tensor, trace_of, world_group

T, H, F = 4096, 8192, 28672
VIEW = frozenset({"view"})
POINTWISE = frozenset({"pointwise"})


def only(program: Program) -> dict[str, object]:
    """The one op's kind and parameters, but the L2 ones (tests/trace/test_residency.py checks those)."""
    assert len(program.ops) == 1, program.ops
    params = {k: v for k, v in program.ops[0].params.items() if not k.startswith("l2_")}
    return {"kind": program.ops[0].kind, **params}


# --- compute ---------------------------------------------------------------------------------------------------
def test_mm_is_a_gemm_of_its_shapes() -> None:
    x, w = tensor(T, H), tensor(H, F // 8)
    p = lower(trace_of(call("aten.mm", (tensor(T, F // 8),), self=x, mat2=w)))
    assert only(p) == {"kind": "gemm", "m": T, "n": F // 8, "k": H, "batch": 1, "dtype": "bf16"}
    assert p.ops[0].host == "cublas" and p.ops[0].stream == "compute" and p.ops[0].name == "aten.mm"


def test_addmm_bmm_linear_and_tf32() -> None:
    bias, a, b = tensor(64), tensor(32, 16, dtype="float32"), tensor(16, 64, dtype="float32")
    p = lower(trace_of(call("aten.addmm", (tensor(32, 64),), self=bias, mat1=a, mat2=b), float32_matmul="tf32"))
    assert only(p) | {} == {"kind": "gemm", "m": 32, "n": 64, "k": 16, "batch": 1, "dtype": "tf32"}
    p = lower(trace_of(call("aten.bmm", (tensor(12, 128, 128),), self=tensor(12, 128, 64), mat2=tensor(12, 64, 128))))
    assert only(p)["batch"] == 12 and only(p)["m"] == 128 and only(p)["k"] == 64
    p = lower(trace_of(call("aten.linear", (tensor(2, 8, 32),), input=tensor(2, 8, 16), weight=tensor(32, 16))))
    assert (only(p)["m"], only(p)["n"], only(p)["k"]) == (16, 32, 16)


def test_empty_gemm_is_no_op() -> None:
    assert lower(trace_of(call("aten.mm", (tensor(0, 8),), self=tensor(0, 4), mat2=tensor(4, 8)))).ops == ()


def test_grouped_mm_counts_every_token_once() -> None:
    p = lower(trace_of(call("aten._grouped_mm", (tensor(512, 256),), self=tensor(512, 64), mat2=tensor(8, 64, 256))))
    assert (only(p)["m"], only(p)["n"], only(p)["k"], only(p)["batch"]) == (512, 256, 64, 1)


def test_attention_gqa_and_causal() -> None:
    q, kv = tensor(2, 32, 4096, 128), tensor(2, 8, 4096, 128)
    sdpa = call("aten.scaled_dot_product_attention", (q,), query=q, key=kv, value=kv, is_causal=True, attn_mask=None)
    assert only(lower(trace_of(sdpa))) == {
        "kind": "attention", "batch": 2, "heads": 32, "seq_q": 4096, "seq_kv": 4096, "head_dim": 128,
        "kv_heads": 8, "causal": True, "dtype": "bf16",
    }  # fmt: skip


def test_flash_forward_layout_and_backward() -> None:
    q, kv = tensor(1, 1024, 16, 64), tensor(1, 2048, 4, 64)
    fwd = call("aten._flash_attention_forward", (q,), query=q, key=kv, value=kv, is_causal=False)
    assert only(lower(trace_of(fwd)))["heads"] == 16 and only(lower(trace_of(fwd)))["seq_kv"] == 2048
    q4 = tensor(1, 16, 1024, 64)
    bwd = call("aten._scaled_dot_product_flash_attention_backward", (q4,), query=q4, key=q4, value=q4, is_causal=True)
    assert only(lower(trace_of(bwd)))["backward"] is True


def test_norms_take_rows_and_cols() -> None:
    x = tensor(T, H)
    ln = call("aten.native_layer_norm", (x,), input=x, normalized_shape=(H,))
    sm = call("aten._softmax", (tensor(8, 16, 32),), self=tensor(8, 16, 32), dim=1)
    assert only(lower(trace_of(ln))) == {"kind": "norm", "op": "layernorm", "rows": T, "cols": H, "dtype": "bf16"}
    assert (only(lower(trace_of(sm)))["rows"], only(lower(trace_of(sm)))["cols"]) == (256, 16)


def test_elementwise_reads_and_writes_in_output_tensors() -> None:
    x, y = tensor(T, H), tensor(T, H)
    add = call("aten.add", (x,), tags=POINTWISE, self=x, other=y)
    assert only(lower(trace_of(add))) == {
        "kind": "elementwise", "reads": 2, "writes": 1, "flops_per_element": 1.0, "elements": T * H, "dtype": "bf16"
    }  # fmt: skip
    scaled = call("aten.mul", (x,), tags=POINTWISE, self=x, other=0.5)  # a python number: the vectorised kernel
    assert "curve" not in only(lower(trace_of(scaled)))
    gelu = call("aten.gelu", (x,), tags=POINTWISE, self=x)
    assert only(lower(trace_of(gelu)))["flops_per_element"] == 9.0
    cmp = call("aten.gt", (tensor(T, H, dtype="bool"),), tags=POINTWISE, self=x, other=0)
    got = only(lower(trace_of(cmp)))
    assert (got["dtype"], got["reads"], got["writes"]) == ("fp8", 2, 1)  # 2-byte reads over 1-byte outputs
    zeros = call("aten.zeros", (x,), size=(T, H))
    assert only(lower(trace_of(zeros)))["reads"] == 0


def test_copies_views_and_host_work() -> None:
    x = tensor(T, H)
    xt = TensorMeta((H, T), "bfloat16", 2, (1, H), "gpu")
    assert lower(trace_of(call("aten.t", (xt,), tags=VIEW, self=x))).ops == ()
    assert lower(trace_of(call("aten.empty", (x,), size=(T, H)))).ops == ()
    clone = call("aten.clone", (tensor(H, T),), self=xt)  # into a contiguous layout: reads across xt's rows
    assert only(lower(trace_of(clone))) == {
        "kind": "copy",
        "bytes": T * H * 2,
        "layout": "transpose",
        "elements": T * H,
    }
    keep = call("aten.clone", (xt,), self=xt)  # the strides kept: a plain copy
    assert only(lower(trace_of(keep))) == {"kind": "copy", "bytes": T * H * 2}
    rows = TensorMeta((T, H // 2), "bfloat16", 2, (H, 1), "gpu")  # every row's first half: a strided copy
    half = only(lower(trace_of(call("aten.clone", (tensor(T, H // 2),), self=rows))))
    assert half == {"kind": "copy", "bytes": T * H, "layout": "strided_copy", "elements": T * H // 2}
    same = call("aten.clone", (tensor(T, H),), self=x)  # dense to dense, one dtype: the copy engine's memcpy
    assert "layout" not in only(lower(trace_of(same)))
    wide = TensorMeta((T, H), "bfloat16", 2, (0, 1), "gpu")  # one row expanded: read with repeats
    assert only(lower(trace_of(call("aten.clone", (tensor(T, H),), self=wide))))["layout"] == "strided_copy"
    into = call("aten.copy_", (tensor(H, T),), self=tensor(H, T), src=xt)
    assert only(lower(trace_of(into)))["layout"] == "transpose"
    cast = call("aten._to_copy", (tensor(T, H, dtype="float32"),), self=x, dtype="float32")
    assert only(lower(trace_of(cast))) == {"kind": "copy", "bytes": T * H * 3, "layout": "cast_up"}  # 2 B in, 4 out
    down = call("aten._to_copy", (x,), self=tensor(T, H, dtype="float32"), dtype="bfloat16")
    assert only(lower(trace_of(down)))["layout"] == "cast_down"
    q = call("aten._to_copy", (tensor(T, H, dtype="int8"),), self=tensor(T, H, dtype="float32"), dtype="int8")
    assert only(lower(trace_of(q)))["layout"] == "cast_up"  # PyTorch's unrolled kernel, as bf16 to fp32
    host = tensor(T, H, device="host")
    assert lower(trace_of(call("aten.add", (host,), tags=POINTWISE, self=host, other=host))).ops == ()


def test_copy_to_the_host_syncs_unless_non_blocking() -> None:
    x, host = tensor(64, 64), tensor(64, 64, device="host")
    p = lower(trace_of(call("aten._to_copy", (host,), self=x, device="cpu")))
    assert [op.kind for op in p.ops] == ["copy", "sync"] and p.ops[1].host == "sync"
    p = lower(trace_of(call("aten._to_copy", (host,), self=x, device="cpu", non_blocking=True)))
    assert [op.kind for op in p.ops] == ["copy"]
    p = lower(trace_of(call("aten.copy_", (x,), self=x, src=host)))  # host to device: no wait
    assert [op.kind for op in p.ops] == ["copy"]


def test_index_sort_reduction_and_unmodelled() -> None:
    table, ids = tensor(128256, H), tensor(T, dtype="int64")
    emb = call("aten.embedding", (tensor(T, H),), weight=table, indices=ids)
    assert only(lower(trace_of(emb))) == {
        "kind": "index",
        "bytes": T * H * 2,
        "op": "index_select",
        "index_bytes": T * 8,
    }
    src = tensor(T, H)
    scatter = call("aten.index_add_", (tensor(2 * T, H),), self=tensor(2 * T, H), dim=0, index=ids, source=src)
    assert only(lower(trace_of(scatter))) | {} == {
        "kind": "index",
        "bytes": T * H * 2,
        "op": "index_add",
        "index_bytes": T * 8,
    }
    topk = call("aten.topk", (tensor(T, 8), tensor(T, 8, dtype="int64")), self=tensor(T, 64, dtype="float32"), k=8)
    assert only(lower(trace_of(topk))) == {"kind": "sort", "elements": T * 64, "dtype": "fp32"}
    rows = call("aten.sort", (tensor(T, 64), tensor(T, 64, dtype="int64")), self=tensor(T, 64), dim=-1)
    assert only(lower(trace_of(rows)))["cols"] == 64  # the sorted dimension: rows this short sort in place
    assert only(lower(trace_of(call("aten.sort", (), self=tensor(T, 64), dim=0))))["cols"] == T
    x = tensor(T, H)
    red = call("aten.sum", (tensor(T),), tags=frozenset({"reduction"}), self=x, dim=(1,))
    assert only(lower(trace_of(red))) == {"kind": "reduction", "elements": T * H, "outputs": T, "dtype": "bf16"}
    odd = call("aten.linalg_qr", (tensor(T, dtype="int64"),), A=tensor(T, dtype="int64"))
    p = lower(trace_of(odd))
    assert (
        only(p) == {"kind": "unmodelled", "bytes": 2 * T * 8.0, "op": "aten.linalg_qr"}
        and p.ops[0].name == "aten.linalg_qr"
    )
    scan = call("aten.cumsum", (tensor(T, dtype="int64"),), self=tensor(T, dtype="int64"), dim=0)
    got = only(lower(trace_of(scan)))  # a scan reads and writes once, timed by the measured cumsum curve
    assert (got["kind"], got["curve"], got["curve_bytes"]) == ("elementwise", "cumsum", 2 * T * 8)


def test_gathers_and_scatters_name_their_measured_class() -> None:
    x, idx = tensor(T, H), tensor(T, 2, dtype="int64")
    gather = call("aten.gather", (tensor(T, 2),), self=x, dim=1, index=idx)  # one index per element
    assert only(lower(trace_of(gather)))["op"] == "gather"
    src = tensor(T, 2, dtype="float32")
    add = call("aten.scatter_add_", (tensor(T, 8, dtype="float32"),), self=tensor(T, 8, dtype="float32"), dim=1,
               index=idx, src=src)  # fmt: skip
    assert only(lower(trace_of(add))) | {} == {
        "kind": "index",
        "bytes": T * 2 * 4,
        "op": "scatter_add",
        "index_bytes": T * 2 * 8,
    }
    put = call("aten.index_put_", (x,), self=x, indices=[tensor(T, dtype="int64")], values=tensor(T, H))
    assert only(lower(trace_of(put)))["op"] == "index_add"  # whole rows per index
    one = call("aten.index_put_", (tensor(T),), self=tensor(T), indices=[tensor(T, dtype="int64")], values=tensor(T))
    assert only(lower(trace_of(one)))["op"] == "index_put"  # one element per index, no accumulation
    # an index expanded along the rows (stride 0): as many distinct indices as rows, each moving a whole row
    wide = TensorMeta((2 * T, H), "int64", 8, (1, 0), "gpu")
    moe = call("aten.scatter_add_", (tensor(T, H),), self=tensor(T, H), dim=0, index=wide, src=tensor(2 * T, H))
    assert only(lower(trace_of(moe))) | {} == {
        "kind": "index",
        "bytes": 2 * T * H * 2,
        "op": "scatter_add_rows",  # ATen's elementwise scatter, not index_add's kernel
        "index_bytes": 2 * T * 8,
    }


def test_fills_and_ffts_take_their_measured_curves() -> None:
    zeros = only(lower(trace_of(call("aten.zeros", (tensor(T, H),), size=(T, H)))))
    assert (zeros["curve"], zeros["curve_bytes"]) == ("fill", T * H * 2)
    rand = only(lower(trace_of(call("aten.randn", (tensor(T, H),), size=(T, H)))))
    assert "curve" not in rand  # a random number generator is not a fill kernel
    x, out = tensor(64, 4096, dtype="float32"), tensor(64, 2049, dtype="complex64")
    r2c = call("aten._fft_r2c", (out,), self=x, dim=[1], normalization=0, onesided=True)
    assert only(lower(trace_of(r2c)))["curve"] == "rfft"
    along0 = call("aten._fft_r2c", (tensor(2049, 64, dtype="complex64"),), self=tensor(4096, 64, dtype="float32"),
                  dim=[0], normalization=0, onesided=True)  # fmt: skip
    assert only(lower(trace_of(along0)))["curve"] == "rfft_dim0"


def test_consecutive_syncs_count_once() -> None:
    scalar = tensor()
    items = [call("aten._local_scalar_dense", self=scalar) for _ in range(8)]
    assert [op.kind for op in lower(trace_of(*items)).ops] == ["sync"]


# --- communication -------------------------------------------------------------------------------------------------
def _ar(x: TensorMeta, world: int, group: Group | None = None) -> Call:
    return call("c10d.allreduce_", (x,), tensors=(x,), process_group=group or world_group(world))


def test_collective_sizes_follow_nccl_tests() -> None:
    g, part, full = world_group(8), tensor(T // 8, H), tensor(T, H)
    calls = [
        _ar(full, 8),
        call("c10d._allgather_base_", (full,), output_tensor=full, input_tensor=part, process_group=g),
        call("c10d._reduce_scatter_base_", (part,), output_tensor=part, input_tensor=full, process_group=g),
        call("c10d.broadcast_", (full,), tensors=(full,), process_group=g, root_rank=0),
        call("_c10d_functional.all_gather_into_tensor", (full,), input=part, group_size=8, group_name="0", group=g),
        call("_c10d_functional.reduce_scatter_tensor", (part,), input=full, group_size=8, group_name="0", group=g),
    ]
    p = lower(trace_of(*calls, world=8))
    assert [(op.params["op"], op.params["bytes"]) for op in p.ops] == [
        ("all_reduce", T * H * 2), ("all_gather", T * H * 2), ("reduce_scatter", T * H * 2),
        ("broadcast", T * H * 2), ("all_gather", T * H * 2), ("reduce_scatter", T * H * 2),
    ]  # fmt: skip
    assert all(op.host == "nccl" and "group" not in op.params for op in p.ops)


def test_all_to_all_with_variable_splits_takes_the_larger_side() -> None:
    sent, received = tensor(300, 64), tensor(500, 64)
    a2a = call("c10d.alltoall_base_", output=received, input=sent, process_group=world_group(4),
               output_split_sizes=(100, 200, 100, 100), input_split_sizes=(50, 50, 100, 100))  # fmt: skip
    assert only(lower(trace_of(a2a, world=4))) == {"kind": "collective", "op": "all_to_all", "bytes": 500 * 64 * 2.0}


def test_subgroup_collective_names_its_ranks() -> None:
    x = tensor(1024)
    p = lower(trace_of(_ar(x, 8, Group((0, 2, 4, 6), 0)), world=8))
    assert only(p)["group"] == (0, 2, 4, 6)


def test_barrier_is_a_tiny_all_reduce_and_a_host_sync() -> None:
    b = call("c10d.barrier", tensor=tensor(1, dtype="bool", device="host"), process_group=world_group(8))
    p = lower(trace_of(b, world=8))
    assert [(op.kind, dict(op.params)) for op in p.ops] == [
        ("collective", {"op": "all_reduce", "bytes": 4.0}), ("sync", {})
    ]  # fmt: skip


def _p2p(name: str, peer: str, rank: int, world: int, x: TensorMeta) -> Call:
    return call(name, tensors=(x,), process_group=world_group(world, 0), **{peer: rank}, tag=0)


def test_ring_send_and_receive_are_one_transfer() -> None:
    x = tensor(1024, 1024)
    ring = [_p2p("c10d.send", "dst", 1, 8, x), _p2p("c10d.recv_", "src", 7, 8, x)]
    assert only(lower(trace_of(*ring, world=8))) == {"kind": "send_recv", "bytes": 2.0 * 2**20, "offset": 1}
    both_ways = [_p2p("c10d.send", "dst", 1, 8, x), _p2p("c10d.recv_", "src", 1, 8, x)]
    p = lower(trace_of(*both_ways, world=8))
    assert [op.params["offset"] for op in p.ops] == [1, 7]


def test_async_collective_runs_on_the_comm_stream() -> None:
    x, a, b = tensor(T, H), tensor(T, H), tensor(H, H)
    calls = [
        _ar(x, 8),
        call("aten.mm", (tensor(T, H),), self=a, mat2=b),
        Call(0, "c10d.wait", target=0),
        call("aten.add", (x,), tags=POINTWISE, self=x, other=x),
    ]
    p = lower(trace_of(*calls, world=8))
    assert [(op.kind, op.stream, op.deps) for op in p.ops] == [
        ("collective", "comm", ()), ("gemm", "compute", ()), ("elementwise", "compute", (0,))
    ]  # fmt: skip


def test_waited_at_once_stays_in_order() -> None:
    x = tensor(T, H)
    calls = [call("aten.mul", (x,), tags=POINTWISE, self=x, other=2), _ar(x, 8), Call(0, "c10d.wait", target=1)]
    p = lower(trace_of(*calls, world=8))
    assert [(op.stream, op.deps) for op in p.ops] == [("compute", ()), ("compute", ())]


def test_async_collective_waits_for_work_before_it() -> None:
    x = tensor(T, H)
    calls = [
        call("aten.mul", (x,), tags=POINTWISE, self=x, other=2),
        _ar(x, 8),
        call("aten.mul", (x,), tags=POINTWISE, self=x, other=3),
    ]  # never waited: overlaps what follows
    p = lower(trace_of(*calls, world=8))
    assert [(op.stream, op.deps) for op in p.ops] == [("compute", ()), ("comm", (0,)), ("compute", ())]


def test_stream_waits_become_deps() -> None:
    x = tensor(64, 64)
    mul = Call(0, "aten.mul", args={"self": x, "other": 2}, outputs=(x,), tags=POINTWISE, stream="stream1")
    view = Call(0, "aten.t", args={"self": x}, outputs=(x,), tags=VIEW, stream="compute", after=(0,))
    add = Call(0, "aten.add", args={"self": x, "other": x}, outputs=(x,), tags=POINTWISE)
    p = lower(trace_of(mul, view, add))
    assert [(op.stream, op.deps) for op in p.ops] == [("stream1", ()), ("compute", (0,))]


@pytest.mark.parametrize("world", [1, 2, 8])
def test_program_world(world: int) -> None:
    assert lower(trace_of(_ar(tensor(8), world), world=world)).world == world


def test_a_value_scattered_and_a_histogram_take_their_classes() -> None:
    idx = tensor(64, 4, dtype="int64")
    fill = call("aten.scatter_", (tensor(64, 1000),), self=tensor(64, 1000), dim=1, index=idx, value=1.0)
    assert only(lower(trace_of(fill))) | {} == {
        "kind": "index",
        "bytes": 64 * 4 * 2,
        "op": "index_put",
        "index_bytes": 64 * 4 * 8,
    }
    ids = tensor(4096, dtype="int64")
    hist = lower(trace_of(call("aten.bincount", (tensor(16, dtype="int64"),), self=ids)))
    # the host waits for the largest value (it sizes the bins), the bins are zeroed, then one atomic add each
    assert [op.kind for op in hist.ops] == ["sync", "elementwise", "index"]
    assert hist.ops[1].params["curve"] == "fill" and hist.ops[2].params["op"] == "scatter_add"
    assert hist.ops[2].params["bytes"] == 4096 * 8 and hist.ops[2].params["index_bytes"] == 4096 * 8


def test_logsumexp_lowers_as_aten_runs_it() -> None:
    x = tensor(T, 64, dtype="float32")
    p = lower(trace_of(call("aten.logsumexp", (tensor(T, dtype="float32"),), self=x, dim=(1,))))
    # maxima, abs, == inf, masked fill, subtract, exp, sum, log, add: two reductions of T x 64 into T
    assert [op.kind for op in p.ops] == ["reduction"] + ["elementwise"] * 5 + ["reduction"] + ["elementwise"] * 2
    assert {op.params["elements"] for op in p.ops if op.kind == "reduction"} == {T * 64}
    assert [op.params["elements"] for op in p.ops if op.kind == "elementwise"] == [T] * 3 + [T * 64] * 2 + [T] * 2


def test_a_broadcast_tensor_operand_takes_the_non_vectorised_class() -> None:
    """A bias row, a 0-dim CUDA tensor or a permuted operand sends PyTorch to ``elementwise_kernel<128, 4>``: the
    ``broadcast`` classes (runs/x1-bcast), at every operand's bytes once; a CPU scalar tensor does not."""
    x, bias = tensor(T, H), tensor(H)
    add = only(lower(trace_of(call("aten.add", (x,), tags=POINTWISE, self=x, other=bias))))
    assert (add["curve"], add["curve_bytes"], add["reads"]) == ("broadcast", 2.0 * (2 * T * H + H), 1)
    norm = tensor(dtype="float32")  # a 0-dim fp32 CUDA tensor times a bf16 gradient, in place (clip_grad_norm_)
    mul_ = only(lower(trace_of(call("aten.mul_", (x,), tags=POINTWISE, self=x, other=norm))))
    assert (mul_["curve"], mul_["curve_bytes"]) == ("broadcast_cast", 2.0 * 2 * T * H + 4.0)
    q = tensor(T, H, dtype="float32")
    div = only(lower(trace_of(call("aten.div_", (q,), tags=POINTWISE, self=q, other=tensor(T, 1, dtype="float32")))))
    assert div["curve"] == "broadcast_fp32"
    xt = TensorMeta((T, H), "bfloat16", 2, (1, T), "gpu")  # a transposed view beside a row-major one
    assert only(lower(trace_of(call("aten.add", (x,), tags=POINTWISE, self=x, other=xt))))["curve"] == "broadcast"
    cpu = tensor(dtype="float32", device="cpu")  # a CPU scalar is folded into the functor
    assert "curve" not in only(lower(trace_of(call("aten.mul", (x,), tags=POINTWISE, self=x, other=cpu))))


def test_integer_collectives_say_so() -> None:
    from rooflib.trace.comm import lower_comm
    from rooflib.trace.pieces import Context
    from rooflib.trace.records import Call, TensorMeta

    def meta(dtype: str) -> TensorMeta:
        return TensorMeta((1024,), dtype, 1.0 if dtype == "uint8" else 2.0, (1,), "gpu")

    ctx = Context(world=8, rank=0)
    for dtype, integer in (
        ("uint8", True),
        ("int64", True),
        ("bool", True),
        ("bfloat16", False),
        ("float8_e4m3fn", False),
    ):
        call = Call(0, "c10d.allreduce_", args={"tensors": [meta(dtype)]}, outputs=(meta(dtype),))
        (piece,) = lower_comm(call, ctx)
        assert piece.params.get("integer", False) is integer, dtype
