from __future__ import annotations

from rooflib.bench.ce_pipeline import _pieces


def test_pieces_cover_the_rows_once() -> None:
    for rows, chunks in [(4096, 4), (4096, 3), (10, 4), (1, 4), (7, 1)]:
        p = _pieces(rows, chunks)
        assert p[0][0] == 0 and p[-1][1] == rows and len(p) <= chunks
        assert all(a < b for a, b in p) and all(p[i][1] == p[i + 1][0] for i in range(len(p) - 1))
