"""The tensor-parallel worker's pieces that need no GPU: options, shapes, FLOP and byte counts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rooflib.bench.tp_worker import main, parser


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
