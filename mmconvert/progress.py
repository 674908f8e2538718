"""The progress bar of a run, a sweep, a transform or a check: results as they come, counted
on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable


def progress_bar(results, total: int | None, show: bool,
                 passed: Callable[[], int] | None = None):
    """``results`` as they come, with a progress bar on stderr when ``show`` (a count when
    ``total`` is not known). ``passed()``: the items counted though they give no result (a
    resumed run's items already done), so far."""
    if not show or total == 0:  # no bar: tqdm is not imported (5 to 10 ms of a run's start)
        yield from results
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="item", file=sys.stderr) as bar:
        made = 0
        try:
            for result in results:
                made += 1
                yield result
                bar.update(made + (passed() if passed else 0) - bar.n)
        finally:  # also when the sink stops early (--limit)
            bar.update(made + (passed() if passed else 0) - bar.n)
