"""The paired comparison of two conditions on the same items."""

from __future__ import annotations

from math import comb

BOOTSTRAP_SAMPLES = 10_000


def bootstrap_mean(values: list[float], seed: int = 0,
                   samples: int = BOOTSTRAP_SAMPLES) -> tuple[float, float]:
    """95 % interval of the mean of ``values`` (resampled with replacement), seeded."""
    import numpy as np

    if not values:
        return (0.0, 0.0)
    data = np.asarray(values, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(data), (samples, len(data)))
    low, high = np.percentile(data[picks].mean(axis=1), [2.5, 97.5])
    return float(low), float(high)


def paired_bootstrap(a: list[float], b: list[float], seed: int = 0,
                     samples: int = BOOTSTRAP_SAMPLES) -> tuple[float, float]:
    """95 % interval of mean(a) - mean(b), in the units given, resampling items jointly (each
    draw keeps an item's two scores together), seeded."""
    if len(a) != len(b):
        raise ValueError("paired scores need the same items")
    return bootstrap_mean([x - y for x, y in zip(a, b, strict=True)], seed, samples)


def mcnemar_exact(a: list[bool], b: list[bool]) -> float:
    """Two-sided exact McNemar p of paired right/wrong outcomes: the binomial test of the
    discordant pairs (right in one condition only) against a fair coin."""
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)
