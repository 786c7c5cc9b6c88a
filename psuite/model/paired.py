"""Two experiments' call paths side by side, one metric's weight in each:
what a differential flame graph draws (analysis/flame_diff.py computes it,
formats/exporters/folded_diff.py writes it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from psuite.model.experiment import Metric


@dataclass
class Paired:
    """Per unified call path (parents before children): its region names
    from the root, and the weights before (the subtrahend) and after (the
    minuend) as integers; a metric in seconds in microseconds, since flame
    graphs weigh in integers and most paths take less than a second."""

    metric: Metric
    paths: list[tuple[str, ...]]
    before: np.ndarray
    after: np.ndarray
