"""The tensor-parallel worker's pieces that need no GPU: options, shapes, FLOP and byte counts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rooflib.bench.tp_worker import IMPLS, WORKLOADS, Shape, main, parser


def test_help_needs_no_torch() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rooflib.bench.tp_worker", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0 and "fused_matmul_reduce_scatter" in out.stdout


@pytest.mark.parametrize(("flag", "value"), [("--workloads", "gemm_xx"), ("--impls", "magic")])
def test_unknown_names_stop_before_torch(flag: str, value: str) -> None:
    with pytest.raises(SystemExit, match=value):
        main(["--out", "unused.jsonl", flag, value])


def test_counts() -> None:
    assert WORKLOADS == ("gemm_rs", "ag_gemm", "gemm_ar") and "fused" in IMPLS
    rs = Shape("gemm_rs", 4096, 8192, 1024, 2)
    assert rs.flops("sequential") == 2.0 * 4096 * 512 * 8192  # each GPU multiplies A[M, K/g] by W[K/g, N]
    assert rs.flops("comm_only") == 0.0
    assert rs.comm_bytes() == 2 * 4096 * 8192  # reduce-scatter input, bf16
    ag = Shape("ag_gemm", 4096, 8192, 1024, 2)
    assert ag.flops("fused") == 2.0 * 4096 * 1024 * 4096  # all-gathered X[M, K] by W[K, N/g]
    assert ag.comm_bytes() == 2 * 4096 * 1024  # all-gather output
    assert Shape("gemm_ar", 4096, 8192, 1024, 2).comm_bytes() == 2 * 4096 * 8192


# torchrun's own long options (torch 2.11, torch.distributed.run): argparse matches abbreviations, so a worker
# option that is a prefix of one of these (as --m once was) is taken by torchrun and the job never starts.
TORCHRUN_OPTIONS = (
    "--nnodes --nproc-per-node --nproc_per_node --rdzv-backend --rdzv-endpoint --rdzv-id --rdzv-conf --standalone "
    "--max-restarts --max_restarts --monitor-interval --monitor_interval --start-method --event-log-handler --role "
    "--module --no-python --run-path --log-dir --redirects --tee --local-ranks-filter --duplicate-stdout-filters "
    "--duplicate-stderr-filters --node-rank --master-addr --master_addr --master-port --master_port --local-addr "
    "--logs-specs --numa-binding --signals-to-handle --virtual-local-rank"
).split()


def test_options_are_not_torchrun_abbreviations() -> None:
    mine = [o for action in parser()._actions for o in action.option_strings if o.startswith("--")]
    assert "--ms" in mine and "--ks" in mine
    for option in mine:
        assert not [t for t in TORCHRUN_OPTIONS if t.startswith(option)], option
