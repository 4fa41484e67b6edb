from __future__ import annotations

import pytest

from rooflib.bench.nccl_text import nccl_model_time, parse_nccl_tests, parse_tuning

OLD_STYLE = """\
host:1:1 [0] NCCL INFO Latency/AlgBw |    Tree/    LL |    Tree/ LL128 |    Tree/Simple |    Ring/    LL |    Ring/ LL128 |    Ring/Simple |
host:1:1 [0] NCCL INFO  Max NThreads |            512 |            640 |            512 |            512 |            640 |            512 |
host:1:1 [0] NCCL INFO     Broadcast |     0.0/   0.0 |     0.0/   0.0 |     0.0/   0.0 |     4.6/  16.0 |    10.7/  96.0 |    11.4/ 240.0 |
host:1:1 [0] NCCL INFO     AllReduce |     6.4/  10.0 |     8.5/  80.0 |    30.0/ 200.0 |     5.1/  12.0 |    12.0/  90.0 |    16.8/ 230.0 |
"""

NEW_STYLE = """\
h:1:1 [0] NCCL INFO   Algorithm   |           Tree           |           Ring           |
h:1:1 [0] NCCL INFO   Protocol    |   LL    LL128    Simple  |   LL    LL128    Simple  |
h:1:1 [0] NCCL INFO  Max NThreads |  512    640      512     |  512    640      512     |
h:1:1 [0] NCCL INFO   AllGather   |  0.0/0.0  0.0/0.0  0.0/0.0 |  4.4/12.5  9.0/70.0  10.0/180.0 |
"""

NCCL_TESTS = """\
# nccl-tests version 2.13.9 nccl-headers=22105 nccl-library=22105
# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid 1 on host device  0 [0x07] NVIDIA H200
#  Rank  1 Group  0 Pid 1 on host device  1 [0x08] NVIDIA H200
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    10.50   99.86   99.86      0    10.20  102.80  102.80      0
  1073741824     268435456     float     sum      -1   2950.0  363.98  363.98      0   2940.0  365.22  365.22      0
"""


def test_old_layout() -> None:
    entries = parse_tuning(OLD_STYLE)
    ring_simple = [e for e in entries if e.op == "all_reduce" and e.algorithm == "Ring" and e.protocol == "Simple"]
    assert ring_simple[0].latency_s == pytest.approx(16.8e-6) and ring_simple[0].algbw_bytes_per_s == pytest.approx(
        230e9
    )
    t, pick = nccl_model_time(entries, "all_reduce", 1 << 30)
    assert pick == "Ring/Simple" and t == pytest.approx(16.8e-6 + (1 << 30) / 230e9)
    _, pick_small = nccl_model_time(entries, "all_reduce", 1024)
    assert pick_small == "Ring/LL"
    assert nccl_model_time(entries, "broadcast", 1 << 20)[1] == "Ring/Simple"  # 15.8 us against 21.6 with LL128


def test_new_layout() -> None:
    entries = parse_tuning(NEW_STYLE)
    best = nccl_model_time(entries, "all_gather", 1 << 30)
    assert best[1] == "Ring/Simple" and best[0] == pytest.approx(10e-6 + (1 << 30) / 180e9)


def test_nccl_tests_output() -> None:
    rows = parse_nccl_tests(NCCL_TESTS)
    assert len(rows) == 4 and {r["op"] for r in rows} == {"all_reduce"} and rows[0]["gpus"] == 2
    big = rows[2]
    assert big["bytes"] == 1 << 30 and big["time_s"] == pytest.approx(2950e-6) and big["verified"] is True
    assert [r["mode"] for r in rows[:2]] == ["stream", "stream-in-place"]  # out of place: what calibration fits
    assert big["busbw_bytes_per_s"] == pytest.approx(363.98e9)
