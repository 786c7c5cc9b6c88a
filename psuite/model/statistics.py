"""Summary statistics of a list of values, exact where floats allow: the
sum (fsum, rounded once), the mean, the population standard deviation and
the quartiles, finite for values near float's range.  Shared by psprocess
-c's statistics and the CUBE statistics file."""

from __future__ import annotations

import math


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """Q1, median, Q3 by linear interpolation (statistics.quantiles(n=4,
    method="inclusive")), each a weighted mean of two neighbours, so it
    stays finite for values near float's range (where quantiles' own
    products overflow to inf)."""
    data = sorted(values)
    if len(data) == 1:
        return data[0], data[0], data[0]
    out = []
    for i in (1, 2, 3):
        j, delta = divmod(i * (len(data) - 1), 4)
        out.append(data[j] if delta == 0 else data[j] * ((4 - delta) / 4) + data[j + 1] * (delta / 4))
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
