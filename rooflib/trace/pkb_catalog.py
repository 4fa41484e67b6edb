"""rooflib's grouping of the ParallelKernelBench problems into categories (PKB itself has none; the groups are
ours, by what a problem's reference spends its time on), for the tables and the speed-up plot by category.

>>> category_of(1), category_of(16), category_of(54)
('collective', 'gemm+comm', 'attention')
"""

from __future__ import annotations

__all__ = ["CATEGORIES", "category_of"]

_GROUPS: dict[str, tuple[int, ...]] = {
    "collective": (1, 2, 3, 4, 5, 6, 7, 8),
    "gemm+comm": (11, 12, 13, 14, 15, 16, 46),
    "norm+quant": (9, 17, 18, 19, 20, 45),
    "training": (21, 22, 23, 40, 41, 42, 43, 44, 47, 48, 52, 53, 63, 86),
    "loss": (24, 25, 58, 73, 82, 83, 84),
    "moe": (26, 27, 28, 29, 30, 31, 32, 49, 50, 51),
    "attention": (33, 34, 35, 36, 37, 38, 39, 54, 55, 56, 57, 74, 75, 77),
    "sparse+graph": (10, 64, 65, 66, 67, 68, 69, 70),
    "scientific": (59, 60, 61, 62, 71, 72, 76, 78, 79, 80, 81, 85, 87),
}
CATEGORIES: tuple[str, ...] = tuple(_GROUPS)
"""The category names, in the order tables and plots list them."""

_BY_ID = {pid: name for name, ids in _GROUPS.items() for pid in ids}


def category_of(problem_id: int) -> str:
    """The category of PKB problem ``problem_id`` (``other`` for a problem newer than this grouping)."""
    return _BY_ID.get(int(problem_id), "other")
