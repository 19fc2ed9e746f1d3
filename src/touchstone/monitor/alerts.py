"""Alerts on a window: its metric mean past the metric's threshold, or a regression against the
per-row scores of earlier windows (the baseline) beyond noise.

The regression test is Welch's unequal-variances t-test, one-sided in the metric's bad direction:
with means m, sample variances s² (n - 1 denominators) and sizes n of the window (w) and the
baseline (b), ``t = (m_w - m_b) / sqrt(s²_w / n_w + s²_b / n_b)`` with the Welch–Satterthwaite
degrees of freedom ``df = (s²_w/n_w + s²_b/n_b)² / ((s²_w/n_w)² / (n_w - 1) + (s²_b/n_b)² / (n_b - 1))``;
the p-value is ``P(T_df <= t)`` for a metric where higher is better (``P(T_df >= t)`` otherwise). An
alert fires when ``p < alpha``. Both samples need two scores at least. When both variances are zero
the scores are constant and the p-value is 0 if the window is worse, else 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

WELCH = "Welch's t-test (one-sided)"


@dataclass(frozen=True)
class Alert:
    """One alert: which monitor, window and metric, why (``kind``, ``method``), and the numbers."""

    monitor: str
    window_start: str
    window_end: str
    metric: str
    kind: str
    """``threshold`` (the window's mean is past the threshold) or ``regression`` (against the baseline)."""
    method: str
    value: float
    """The window's mean."""
    reference: float
    """The threshold, or the baseline's mean."""
    n: int
    run_id: str | None = None
    p_value: float | None = None
    baseline_n: int | None = None
    baseline_windows: int | None = None

    @property
    def message(self) -> str:
        where = f"monitor {self.monitor}, window {self.window_start}..{self.window_end}: {self.metric}"
        if self.kind == "threshold":
            return (
                f"{where} mean {self.value:.4g} is past its threshold {self.reference:.4g} "
                f"(n={self.n}; {self.method})"
            )
        return (
            f"{where} mean {self.value:.4g} regressed from the baseline's {self.reference:.4g} "
            f"(n={self.n} vs {self.baseline_n} over {self.baseline_windows} windows; "
            f"{self.method}, p={self.p_value:.3g})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message}


def threshold_breached(mean: float, threshold: float, higher_is_better: bool) -> bool:
    """True when a window's mean is on the wrong side of the threshold (under it, or above it for a
    metric where lower is better)."""
    return mean < threshold if higher_is_better else mean > threshold


def _mean_var(xs: Sequence[float]) -> tuple[float, float]:
    n = len(xs)
    mean = math.fsum(xs) / n
    return mean, math.fsum((x - mean) ** 2 for x in xs) / (n - 1)


def welch_t(window: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """Welch's ``(t, df)`` of ``window`` against ``baseline`` (each two values at least)."""
    if len(window) < 2 or len(baseline) < 2:
        raise ValueError("Welch's t-test needs two values in each sample")
    mw, vw = _mean_var(window)
    mb, vb = _mean_var(baseline)
    aw, ab = vw / len(window), vb / len(baseline)
    se2 = aw + ab
    if se2 == 0:
        diff = mw - mb
        return (0.0 if diff == 0 else math.copysign(math.inf, diff)), math.inf
    df = se2**2 / (aw**2 / (len(window) - 1) + ab**2 / (len(baseline) - 1))
    return (mw - mb) / math.sqrt(se2), df


def regression_p_value(window: Sequence[float], baseline: Sequence[float], higher_is_better: bool) -> float:
    """One-sided p-value of Welch's test that the window is worse than the baseline."""
    from scipy.stats import t as student_t

    t, df = welch_t(window, baseline)
    if math.isinf(t) or (t == 0 and math.isinf(df)):
        worse = t < 0 if higher_is_better else t > 0
        return 0.0 if worse else 1.0
    return float(student_t.cdf(t, df) if higher_is_better else student_t.sf(t, df))
