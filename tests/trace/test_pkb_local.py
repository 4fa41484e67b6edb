"""The local part as the fake process group runs it (collectives as host-only calls, all-gathers copying),
and the stand-ins of a run with values (large products and attentions not computed). No PKB needed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rooflib.program import predict_program  # noqa: E402
from rooflib.program.ir import ProgramBuilder  # noqa: E402
from rooflib.specs import load_system  # noqa: E402
from rooflib.trace.pkb_table import fake_name, local_part  # noqa: E402
from rooflib.trace.standin import STAND_IN_FLOPS, heavy_flops, stand_in  # noqa: E402


def _program() -> ProgramBuilder:
    b = ProgramBuilder("p", world=8)
    mm = b.gemm(64, 64, 64)
    b.collective("all_reduce", 8192, after=[mm], name="c10d.allreduce_")
    b.collective("all_gather", 1 << 20, name="c10d._allgather_base_")
    b.elementwise("add", 4096)
    return b


def test_fake_local_part_keeps_each_collective_as_its_host_call() -> None:
    h200 = load_system("hgx-h200", gpus=1)
    ops = h200.device.host.ops  # type: ignore[union-attr]
    local = local_part(_program().build(), ops)
    names = [op.name for op in local.ops]
    assert names[1:3] == ["fake.c10d.allreduce_", "fake.c10d._allgather_base_@w8"]
    assert names[3:10] == ["fake.c10d._allgather_base_@w8.part"] * 7 and local.ops[10].kind == "elementwise"
    # one copy of the input per part of the output, as the fake group runs it; the first carries the host cost
    assert local.ops[1].params["bytes"] == 0.0 and local.ops[2].params["bytes"] == float(1 << 20) / 8
    # each part reads the source the copy before it read (L2) and writes into the output block the allocator
    # reuses call after call: warm where one call's traffic (here only the all-gather's, 1 MiB out + 128 KiB in)
    # fits the L2
    loop = float(1 << 20) * (1 + 1 / 8)
    part = {"bytes": float(1 << 20) / 8, "l2_warm": 0.5, "l2_warm_out": 0.5, "l2_reuse_out": loop}
    assert all(op.params == part for op in local.ops[3:10])
    assert local.ops[2].params["l2_warm_out"] == 0.5 and "l2_warm" not in local.ops[2].params
    assert all(op.host == "none" and op.deps == (i + 2,) for i, op in enumerate(local.ops[3:10]))
    fake = predict_program(local, h200, gpus=1)
    dropped = predict_program(local_part(_program().build(), fake=False), h200, gpus=1)
    extra = ops["fake.c10d.allreduce_"].value + ops["fake.c10d._allgather_base_@w8"].value
    assert fake.host_time_s == pytest.approx(dropped.host_time_s + extra)
    assert fake.bound_time_s > dropped.bound_time_s  # the all-gather's copies are device work


def test_fake_names_fall_back_to_the_world_free_key() -> None:
    assert fake_name("c10d.alltoall_", 16, {"fake.c10d.alltoall_@w8": 1e-5}) == "fake.c10d.alltoall_"
    assert fake_name("c10d.recv_", 2) == fake_name("c10d.send", 2) == "fake.c10d.send_recv"


def test_heavy_ops_are_stood_in_for_with_their_meta_shapes() -> None:
    a, b = torch.ones(2048, 1024), torch.ones(1024, 512)
    mm = torch.ops.aten.mm.default
    assert heavy_flops("mm", ((a, b), {})) == 2.0 * 2048 * 1024 * 512 > STAND_IN_FLOPS
    assert heavy_flops("add", ((a, a), {})) == 0.0
    out = stand_in(torch, mm, (a, b), {})
    assert out.shape == (2048, 512) and out.dtype == a.dtype and bool(out.std() > 0.5)


def test_fills_add_the_device_copies_of_integer_collectives_only() -> None:
    import dataclasses

    from rooflib.program.ir import Program

    b = ProgramBuilder("p", world=8)
    b.collective("all_gather", 1 << 20, name="c10d.allgather_")  # a byte view of fp8 data (PKB problem 19)
    b.collective("all_reduce", 64, name="c10d.allreduce_")  # counts
    b.collective("all_gather", 1 << 20, name="c10d._allgather_base_")  # floating point: never filled
    base = b.build()
    ops = tuple(
        dataclasses.replace(op, params={**op.params, "integer": True}) if i < 2 else op for i, op in enumerate(base.ops)
    )
    program = Program(base.name, base.world, ops)
    plain, filled = local_part(program), local_part(program, fills=True)
    fills = [op for op in filled.ops if op.name.startswith("fill.")]
    assert [op.name for op in fills] == ["fill.c10d.allgather_"] * 8 + ["fill.c10d.allreduce_"]
    assert [op.params["bytes"] for op in fills] == [float(1 << 20) / 8] * 8 + [64.0]  # each part; the sum's mul_
    assert all(op.kind == "copy" and op.host == "none" for op in fills)
    # a gather's fill reads the source the copy before it read and rewrites the part the fake copy wrote
    part = float(1 << 20) / 8
    assert fills[0].params["l2_reuse"] == 2 * part and fills[0].params["l2_reuse_out"] == float(1 << 20) + part
    assert "l2_warm" not in fills[-1].params  # the sum's mul_: what last touched the tensor is not known here
    assert (
        len(filled.ops) == len(plain.ops) + 9
        and local_part(program, fake=False, fills=True).ops == local_part(program, fake=False).ops
    )  # no fake group, nothing to fill
    for i, op in enumerate(filled.ops):  # every fill waits for the op before it: the fake call, then the fill before
        if op.name.startswith("fill."):
            assert op.deps == (i - 1,)
    h200 = load_system("hgx-h200", gpus=1)
    assert predict_program(filled, h200, gpus=1).bound_time_s > predict_program(plain, h200, gpus=1).bound_time_s
