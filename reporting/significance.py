"""Each condition's difference from µB-M, paired by seed, with a 95 % t-interval.

For seeds s shared by both cells, d_s = condition_s − M_s; the interval is mean(d) ± t(0.975, n−1)
· sd(d) / √n. Pairing removes what one seed's fine-tuning does to both cells alike. When one cell has
more seeds (µB-M at 42–46, a condition at 42–44), the pair is taken over the shared seeds and the
figure says how many; a cell pair with no seed in common is reported as unpaired, never paired by
position. Where the shared seeds leave some of either cell's out (or are too few for a paired
interval), `welch_difference` compares the two cells' means over all their seeds (Welch's unpaired
t-interval), said as such: it leaves in both variances what a seed does to both cells alike, which
pairing removes.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

# Two-sided 95 % quantiles of Student's t, t(0.975, df), df = 1..30 (to 6 decimals).
T_975 = {
    1: 12.706205, 2: 4.302653, 3: 3.182446, 4: 2.776445, 5: 2.570582, 6: 2.446912, 7: 2.364624,
    8: 2.306004, 9: 2.262157, 10: 2.228139, 11: 2.200985, 12: 2.178813, 13: 2.160369, 14: 2.144787,
    15: 2.131450, 16: 2.119905, 17: 2.109816, 18: 2.100922, 19: 2.093024, 20: 2.085963, 21: 2.079614,
    22: 2.073873, 23: 2.068658, 24: 2.063899, 25: 2.059539, 26: 2.055529, 27: 2.051831, 28: 2.048407,
    29: 2.045230, 30: 2.042272,
}
Z_975 = 1.959964


def t_quantile_975(df: int) -> float:
    """t(0.975, df); beyond the table, the first Cornish-Fisher term z + (z³ + z) / (4 df)."""
    if df < 1:
        raise ValueError(f"t quantile needs df >= 1, got {df}")
    return T_975[df] if df in T_975 else Z_975 + (Z_975 ** 3 + Z_975) / (4 * df)


@dataclass(frozen=True)
class Difference:
    """condition − baseline: mean over paired seeds, the 95 % half-width (None: not computable), and
    a note when it is not a paired interval."""

    mean: Optional[float]
    half_width: Optional[float]
    n: int
    note: str = ""

    def text(self) -> str:
        if self.mean is None:
            return self.note or "—"
        if self.half_width is None:
            return f"{self.mean:+.2f} ({self.note})"
        return f"{self.mean:+.2f} ± {self.half_width:.2f}" + (f" ({self.note})" if self.note else "")


def per_seed(result: dict) -> Optional[Dict[int, float]]:
    """{seed: test value} of an aggregate_cell result; None if the values cannot be tied to seeds."""
    seeds, values = result.get("seeds") or [], (result.get("test") or {}).get("values")
    if values is None or len(values) != len(seeds):
        return None
    return dict(zip(seeds, values))


def paired_difference(condition: dict, baseline: dict) -> Difference:
    """condition − baseline over the seeds both cells were fine-tuned with; when one cell has seeds
    the other lacks, over the shared ones, noted ("3 shared seeds")."""
    ours, base = per_seed(condition), per_seed(baseline)
    if ours is None or base is None:
        return Difference(None, None, 0, "per-seed values not recorded")
    shared = sorted(set(ours) & set(base))
    if not shared:
        return Difference(None, None, 0, f"unpaired seeds ({' '.join(map(str, sorted(ours)))} vs {' '.join(map(str, sorted(base)))})")
    difference = interval([ours[seed] - base[seed] for seed in shared])
    if set(ours) == set(base):
        return difference
    note = f"{len(shared)} shared seed{'s' if len(shared) > 1 else ''}" + (f", {difference.note}" if difference.note else "")
    return Difference(difference.mean, difference.half_width, difference.n, note)


def interval(differences: Sequence[float]) -> Difference:
    n = len(differences)
    mean = statistics.fmean(differences)
    if n == 1:
        return Difference(mean, None, 1, "1 seed, no interval")
    return Difference(mean, t_quantile_975(n - 1) * statistics.stdev(differences) / math.sqrt(n), n)


def welch_difference(condition: Sequence[float], baseline: Sequence[float]) -> Difference:
    """mean(condition) − mean(baseline) with Welch's 95 % interval, unpaired: half-width t(0.975, ν) ·
    √(s₁²/n₁ + s₂²/n₂), ν the Welch–Satterthwaite degrees of freedom rounded down (the wider interval)."""
    n1, n2 = len(condition), len(baseline)
    mean = statistics.fmean(condition) - statistics.fmean(baseline)
    note = f"unpaired, Welch, {n1} vs {n2} seeds"
    if n1 < 2 or n2 < 2:
        return Difference(mean, None, min(n1, n2), note + ", no interval")
    a, b = statistics.variance(condition) / n1, statistics.variance(baseline) / n2
    if a + b == 0:
        return Difference(mean, 0.0, min(n1, n2), note)
    df = (a + b) ** 2 / (a * a / (n1 - 1) + b * b / (n2 - 1))
    return Difference(mean, t_quantile_975(max(1, math.floor(df))) * math.sqrt(a + b), min(n1, n2), note)
