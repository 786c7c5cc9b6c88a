"""Summary statistics of a list of values, exact where floats allow: the
sum (fsum, rounded once), the mean, the population standard deviation and
the quartiles, finite for values near float's range.  Shared by psprocess
-c's statistics, psprocess stat and the CUBE statistics file."""

from __future__ import annotations

import math

import numpy as np


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """Q1, median, Q3 by linear interpolation (statistics.quantiles(n=4,
    method="inclusive")) of one list of values: quartile_rows of one row."""
    q1, median, q3 = quartile_rows(np.sort(np.asarray(values, dtype=np.float64))[None, :])
    return float(q1[0]), float(median[0]), float(q3[0])


def quartile_rows(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of sorted values (rows, n >= 1): Q1, median and Q3 by linear
    interpolation, each a weighted mean of two neighbours, so that it stays
    finite for values near float's range (where the textbook a + (b - a) t
    overflows to inf).  Used by psprocess -c, psprocess stat and the CUBE
    statistics file alike."""
    n = ordered.shape[1]
    out = []
    for i in (1, 2, 3):
        j, delta = divmod(i * (n - 1), 4)
        out.append(ordered[:, j] if delta == 0 else ordered[:, j] * ((4 - delta) / 4) + ordered[:, j + 1] * (delta / 4))
    return out[0], out[1], out[2]


def total_and_mean(nums: list[float]) -> tuple[float, float]:
    """The exact sum, rounded once (inf when beyond float's range), and the
    mean, finite even when the sum is not."""
    try:
        total = math.fsum(nums)
        return total, total / len(nums)
    except OverflowError:  # a partial sum overflowed: work on the scaled values
        mu = math.fsum(v / len(nums) for v in nums)
        return mu * len(nums), mu


def pstdev(nums: list[float], mu: float) -> float:
    """Population standard deviation around mu; statistics.pstdev works in
    exact fractions, which is slow and overflows for values near float's
    range.  Computed on values scaled to at most 1, so that no square
    overflows."""
    if len(nums) < 2:
        return 0.0
    scale = max(abs(v) for v in nums)
    if not scale or not math.isfinite(scale):
        return 0.0 if not scale else math.nan
    return math.sqrt(math.fsum((v / scale - mu / scale) ** 2 for v in nums) / len(nums)) * scale
