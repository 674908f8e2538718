"""Plots as files: matplotlib on its file backend, and figures written atomically with the same
bytes for the same figure (``mmconvert stats``, eval's heat maps, curves, frontiers and the
decomposition draw through these)."""

from __future__ import annotations

import io
from pathlib import Path

from .manifest import atomic_write


def write_figure(fig, path: Path, **options) -> None:
    """A matplotlib figure as a PNG at ``path``, written atomically (never through a link)."""
    data = io.BytesIO()
    fig.savefig(data, format="png", dpi=100, **options)
    atomic_write(path, data.getvalue())


def pyplot():
    """matplotlib's pyplot on its file backend, or None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_plot(figure, path: Path) -> Path:
    """A finished figure laid out, written as ``write_figure`` writes it (no software stamp,
    so the same figure is the same bytes) and closed."""
    import matplotlib.pyplot as plt

    figure.tight_layout()
    write_figure(figure, path, metadata={"Software": None})
    plt.close(figure)
    return path
