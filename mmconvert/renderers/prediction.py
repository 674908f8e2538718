"""What a vision-token target's width search knows before it lays a width out
(``target.fit_width``): the count nearest the target a model's rule can give pages of a
width (``nearest_count``), the counts the sizes between two tried ones can give
(``box_counts``), the size along the line through two tried pages that gives a count
(``size_for``), and each moved width's prediction for an item (``WidthPrediction``).
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..units import pixels
from ..vision_tokens import width_step
from .target import FONT_STEP, WIDTH_MOVES, Fit, TargetOptions, target_goal


@dataclass(frozen=True)
class Pages:
    """What a rule can count for an item's pages at a page width, known before laying it
    out: its pages are ``full`` px high (each but the last, and the last too unless
    ``last_varies``: a crop cuts it below its text), about ``count`` of them."""

    full: int
    count: int
    last_varies: bool


def nearest_count(rule, width: int, pages: Pages, goal: float) -> int | None:
    """The vision tokens nearest ``goal`` that ``rule`` gives pages ``width`` px wide: one
    page fewer, as many or one more than ``pages.count``, the last of any height up to a full
    page's when it varies. None: the rule refuses such pages."""
    whole = rule(width, pages.full)
    if whole is None:
        return None
    lasts = last_counts(rule, width, pages.full) if pages.last_varies else (whole,)
    best: int | None = None
    for count in range(max(1, pages.count - 1), pages.count + 2):
        before = (count - 1) * whole
        at = bisect.bisect_left(lasts, goal - before)
        for last in lasts[max(0, at - 1):at + 1]:  # the counts either side of the goal
            total = before + last
            if best is None or (abs(total - goal), total) < (abs(best - goal), best):
                best = total
    return best


@functools.lru_cache(maxsize=4096)
def last_counts(rule, width: int, high: int) -> tuple[int, ...]:
    """Every count ``rule`` gives a page ``width`` px wide and 1 to ``high`` px high, in
    order: read at each height, as a processor that scales a small page up to its least
    pixels counts a thin page more than a taller one (Qwen3-VL's 65,536), and the heights
    are the same for a run's items (about a millisecond a width, once)."""
    return tuple(sorted({c for c in (rule(width, h) for h in range(1, high + 1))
                         if c is not None}))


def box_counts(rule, step: int, one, other) -> set[int] | None:
    """The counts ``rule`` gives a page whose size lies between two laid-out pages' (``one``
    and ``other``: lists of pixel sizes), each side read at every ``step`` px (the rule's
    cell) and at its end: the counts the sizes between two font sizes can give, if a page
    grows with the size. None: the pages are not one each."""
    if not one or not other or len(one) != 1 or len(other) != 1:
        return None
    (w0, h0), (w1, h1) = sorted((one[0], other[0]))
    if h1 < h0:
        return None  # a page that grows wider but shorter: not read

    def sides(a: int, b: int) -> list[int]:
        return [*range(a, b, step), b]

    counts = {rule(w, h) for w in sides(w0, w1) for h in sides(h0, h1)}
    return None if None in counts else counts


def size_for(rule, tried: list[tuple[float, list[tuple[int, int]]]], seek: float,
             low: float, high: float) -> float | None:
    """The font size whose page ``rule`` counts nearest ``seek``, its width and height taken
    along the line through the pages of the two tried sizes nearest it (``(size, pages)``,
    one page each; a side as wide as its page stays so); None when there is no such line."""
    if len(tried) < 2 or any(len(pages) != 1 for _, pages in tried):
        return None
    (s0, ((w0, h0),)), (s1, ((w1, h1),)) = tried[:2]
    if s1 == s0:
        return None

    def count(size: float) -> float:
        share = (size - s0) / (s1 - s0)
        width = round(w0 + share * (w1 - w0))
        height = round(h0 + share * (h1 - h0))
        if width < 1 or height < 1:
            return -math.inf
        got = rule(width, height)
        return -math.inf if got is None else got

    def least(reaches) -> float:  # the least size in the bounds whose count reaches
        lo, hi = low, high
        for _ in range(24):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if reaches(count(mid)) else (mid, hi)
        return hi

    if count(high) < seek:
        return high
    first = least(lambda c: c >= seek)
    if count(first) == seek:  # the middle of the sizes the line counts seek at: the surest
        return (first + least(lambda c: c > seek)) / 2
    below = max(low, first - FONT_STEP)
    return first if abs(count(first) - seek) <= abs(count(below) - seek) else below


def filled_width(base) -> int:
    """The pixels across a page of a page renderer's options ``base``: the width of a page
    its text fills."""
    return pixels(base.page_width * getattr(base, "horizontal_scale", 1.0), base.ppi)


class WidthPrediction:
    """``fit_width``'s prediction for a page renderer's options ``base``, from the pages
    ``seen`` at the size ``found`` at the style's width (``probe_at(size, inches)`` lays the
    item out at another width): the count nearest the target the rule can give at a page
    width (inches; None: the style's), or None when it cannot say.

    - A page as wide as its page is filled by its text, and is as wide as any other width.
    - A page narrower than its page (a crop to its text) is the style's page at the widths
      where its lines break at the same words (each side's furthest found by bisection: a
      greedy break that holds at two widths holds between them); at another width, one
      layout says how wide it is, and its width may then grow with the size up to the page's.
    - A size stuck at a bound short of the target keeps its text's area at another width.
    """

    def __init__(self, options: TargetOptions, rule, base, seen: list[tuple[int, int]],
                 found: Fit, goal: float, probe_at, sizes: Sequence[float] = ()):
        self.rule, self.base, self.seen, self.found, self.goal = rule, base, seen, found, goal
        self.probe_at = probe_at
        self.low, self.high = options.min_font_size, options.max_font_size
        near = sorted(sorted(sizes, key=lambda size: abs(size - found.font_size))[:2])
        self.line = [(size, pages) for size, pages in
                     ((size, probe_at(size, None)) for size in near) if pages]
        self.scale = getattr(base, "horizontal_scale", 1.0)
        self.step = width_step(options.ratio_model or "") or 1
        self.crop = getattr(base, "crop", "none")
        full = pixels(base.page_height, base.ppi) if len(seen) == 1 else seen[0][1]
        self.pages = Pages(full, len(seen), last_varies=self.crop != "none")
        self.filled = filled_width(base)
        self.widest = max(w for w, _ in seen)
        tokens = found.vision_tokens
        self.stuck = tokens is not None and (
            (found.font_size <= options.min_font_size and tokens > goal)
            or (found.font_size >= options.max_font_size and tokens < goal))
        self.same: dict[int, int] = {}  # each side: the furthest width step as the style's
        self.near = functools.cache(lambda width: nearest_count(rule, width, self.pages, goal))

    @classmethod
    def of(cls, options: TargetOptions, rule, base, seen, found: Fit, probe_at,
           sizes: Sequence[float] = ()):
        """The prediction, or None where there is none: no pages, not a page renderer's
        options, no goal. ``sizes``: the sizes tried at the style's width."""
        goal = target_goal(options, found.record["text_tokens"])
        if not seen or not goal or not hasattr(base, "page_height"):
            return None
        return cls(options, rule, base, seen, found, goal, probe_at, sizes)

    def __call__(self, inches: float | None) -> int | None:
        if inches is None:
            return self.near(self.widest) if self.widest >= self.filled else None
        width = pixels(inches * self.scale, self.base.ppi)
        if self.widest < self.filled:  # its lines' breaks decide its width
            return self.cropped(inches, width)
        if self.stuck:  # the size cannot move: the same text at this width, its area kept
            return self.area_count(width)
        return self.near(width)

    def start(self, inches: float, aim: int) -> float | None:
        """Where a moved width's search starts: for a page its text fills, the size whose
        page, grown as the style's width's two tried sizes nearest the one found grew, the
        rule counts ``aim`` at this width (None: the size found, as for a size stuck at a
        bound)."""
        if self.widest < self.filled or len(self.line) < 2 or self.stuck:
            return None
        width = pixels(inches * self.scale, self.base.ppi)
        moved = [(size, [(width, h) for _, h in pages]) for size, pages in self.line]
        return size_for(self.rule, moved, aim, self.low, self.high)

    def cropped(self, inches: float, page: int) -> int | None:
        """A page cropped to its text at ``inches`` (``page`` px): the style's count where
        its lines break as at the style's width, else the nearest count of any width from
        the laid-out one to the page's."""
        if self.as_style(inches):
            return self.found.vision_tokens
        probe = self.probe_at(self.found.font_size, inches)
        if not probe:
            return None
        half = max(1, self.step // 2)
        start = (max(w for w, _ in probe) - self.step) // half * half
        counts = [c for c in map(self.near, range(start, page + 1, half)) if c is not None]
        return min(counts, default=None, key=lambda c: (abs(c - self.goal), c))

    def area_count(self, width: int) -> int | None:
        """The count of the pages found, their text's area kept at ``width`` px, less a row
        of the rule's steps toward the target (the area is a guess)."""
        seen, full = self.seen, self.pages.full
        total = sum(h for _, h in seen) * self.widest / width
        total += self.step if (self.found.vision_tokens or 0) < self.goal else -self.step
        whole, rest = divmod(total, full)
        if self.pages.last_varies and round(rest) >= 1:
            counts = [self.rule(width, full)] * int(whole) + [self.rule(width, round(rest))]
        else:
            counts = [self.rule(width, full)] * (int(whole) + (rest > 0))
        return None if None in counts else sum(counts)

    def as_style(self, inches: float) -> bool:
        """Whether the pages at ``inches`` are the style's at the size found."""
        ppi, step = self.base.ppi, self.step
        origin = pixels(self.base.page_width, ppi)
        k = round((pixels(inches, ppi) - origin) / step)
        side = 1 if k > 0 else -1
        if side not in self.same:
            def width(j: int) -> float:
                return round((origin + side * j * step) / ppi, 4)

            def same(j: int) -> bool:
                return self.probe_at(self.found.font_size, width(j)) == self.seen

            lo, hi = 0, WIDTH_MOVES  # the step lo is as the style's; is hi?
            if side < 0 and self.crop == "content" and getattr(self.base, "crop_pad",
                                                                None) is None:
                # ReadBench's crop ends 4 right margins past the widest line: a page as wide
                # as the crop still holds that line
                while lo < hi and pixels(width(lo + 1) * self.scale, ppi) >= self.widest:
                    lo += 1
            if lo < hi and same(hi):
                lo = hi
            while lo < hi - 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if same(mid) else (lo, mid)
            self.same[side] = lo
        return abs(k) <= self.same[side]
