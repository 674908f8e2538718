"""Pages drawn to a target: the font size (within bounds, the PPI fixed) at which an item's
compression ratio for a model (text tokens over vision tokens) is the one asked for, or at
which its pages take a given number of vision tokens (DeepSeek-OCR's budgets).

The search lays the text out, never rasterising: a layout gives the pages' sizes, and the
model's rule (``stats.TOKEN_RULES``) their vision tokens. Vision tokens grow roughly with the
area the text covers, so with the square of the font size: each step scales the size by the
square root of wanted over got (a secant step once two sizes are known), kept inside the
bounds; the size closest to the target is kept. Rules count in steps (tiles, 28 px cells), so
a target inside a step cannot be met exactly: the row says how close it came and why.

With the page width moved too (``fit_width``), each width's count is predicted from the
rule before it is laid out (``nearest_count``, ``WidthPrediction``): a width that cannot come
closer than the best so far is skipped, and the others seek the count predicted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, Field, model_validator

from ..options import OPTIONS
from ..units import pixels
from ..vision_tokens import RULE_ALIASES, WHY_NOT_EXACT, token_rule, width_step

TOLERANCE = 0.05  # the share of the target a result may be off and count as on target
MAX_LAYOUTS = 8
FONT_STEP = 0.05  # points: sizes are searched on this grid, so the row's size is a round one


class TargetOptions(BaseModel):
    """Draw each item at the font size that meets a compression ratio, or a vision-token
    budget, for one model; or at the largest size at which it fits a number of pages."""

    model_config = OPTIONS

    target_ratio: float | None = Field(
        None, gt=0, le=1000, description="the compression ratio to draw each item at: its "
                                         "text tokens over its pages' vision tokens for "
                                         "--ratio-model (needs --tokenizer)")
    vision_budget: int | None = Field(
        None, ge=1, le=10_000_000, description="the vision tokens for --ratio-model each "
                                               "item's pages should take (DeepSeek-OCR: 64, "
                                               "100, 256, 400)")
    ratio_model: str | None = Field(
        None, description="the model whose vision-token rule the target is met for "
                          "(mmconvert stats names them)")
    tokenizer: str | None = Field(
        None, description="the text tokenizer of --target-ratio: a tokenizer.json, a folder "
                          "holding one, a hub id in the local cache, or tiktoken:NAME")
    fit_pages: int | None = Field(
        None, ge=1, le=1000, description="draw each item at the largest font size (in half "
                                         "points) at which it fits this many pages (Text or "
                                         "Pixels: 1)")
    move_width: bool = Field(
        True, description="when the font size alone cannot meet a vision budget or ratio "
                          "exactly, move the page width too, in the ratio model's own steps "
                          "(its 28 px cells for Qwen2.5-VL)")
    min_font_size: float = Field(4.0, gt=2, le=72, description="the smallest font size a "
                                                               "target may choose, in points")
    max_font_size: float = Field(48.0, gt=2, le=72, description="the largest font size a "
                                                                "target may choose, in points")

    @model_validator(mode="after")
    def _whole(self) -> TargetOptions:
        if self.target_ratio is not None and self.vision_budget is not None:
            raise ValueError("give --target-ratio or --vision-budget, not both")
        if self.fit_pages is not None and (self.target_ratio is not None
                                           or self.vision_budget is not None):
            raise ValueError("--fit-pages chooses the size by pages, not by tokens: give it "
                             "alone")
        wanted = self.target_ratio is not None or self.vision_budget is not None
        if wanted and not self.ratio_model:
            raise ValueError("--target-ratio and --vision-budget need --ratio-model")
        if self.target_ratio is not None and not self.tokenizer:
            raise ValueError("--target-ratio needs --tokenizer (the text tokens of a ratio)")
        if not wanted and (self.ratio_model or self.tokenizer):
            raise ValueError("--ratio-model and --tokenizer set a target: give "
                             "--target-ratio or --vision-budget with them (a haystack's "
                             "lengths are counted with --length-tokenizer)")
        if self.min_font_size > self.max_font_size:
            raise ValueError(f"min_font_size {self.min_font_size:g} is over max_font_size "
                             f"{self.max_font_size:g}")
        if self.ratio_model:
            token_rule(self.ratio_model)  # an unknown model: one line with a did-you-mean
        return self

    @property
    def wanted(self) -> bool:
        return (self.target_ratio is not None or self.vision_budget is not None
                or self.fit_pages is not None)



@dataclass
class Fit:
    """The size a search chose and what it gives; ``page_width`` (inches) when it moved."""

    font_size: float
    vision_tokens: int | None
    layouts: int
    record: dict[str, Any]
    page_width: float | None = None
    responsive: bool = True  # the count changed with the font size (a page that grows)


def on_grid(size: float, low: float, high: float) -> float:
    """``size`` on the search's grid, inside the bounds, as a plain decimal."""
    return round(min(high, max(low, round(size / FONT_STEP) * FONT_STEP)), 2)


def fit(options: TargetOptions, text_tokens: int | None, tokens_at, start: float = 12.0,
        aim: int | None = None, between=None, guess=None) -> Fit:
    """The font size within the bounds whose vision tokens (``tokens_at(size)``: the pages'
    tokens for the model, None when its rule refuses a page) come closest to the target,
    searched from ``start`` (the style's own size). Without ``aim`` the search stops within
    half the tolerance; with it (the count nearest the target the rule can give these pages,
    ``nearest_count``) it seeks that count and stops only there. ``between(s0, s1)`` (None: no
    such knowledge) gives the counts the sizes between two tried ones can take, known from
    the rule: a bracket none of whose counts is the aim, or nearer the goal than the best so
    far, is not cut further. ``guess(known, seek)`` (None: no such knowledge) predicts the
    size that gives ``seek`` from the sizes tried so far, ``(size, count)`` in size order, for
    a step that does not yet bracket it."""
    goal = (options.vision_budget if options.vision_budget is not None
            else text_tokens / options.target_ratio if text_tokens and options.target_ratio
            else None)
    low, high = options.min_font_size, options.max_font_size
    tried: dict[float, int | None] = {}

    def error(size: float) -> float:
        got = tried[size]
        return math.inf if got is None or not goal else abs(got - goal) / goal

    step = min(high, max(low, start))
    for _ in range(MAX_LAYOUTS if goal else 1):
        size = on_grid(step, low, high)
        if size not in tried:
            tried[size] = tokens_at(size)
        got = tried[size]
        if not goal or got is None or (got == aim if aim else error(size) <= TOLERANCE / 2):
            break
        nxt = _next_size(tried, size, got, aim or goal, aim, goal, options, between, guess)
        if nxt is None:
            break
        step = nxt
    best = min(tried, key=lambda s: (error(s), abs(s - start))) if goal else next(iter(tried))
    record = _fit_record(options, text_tokens, goal, tried, best, error(best))
    return Fit(best, tried[best], len(tried), record,
               responsive=len({t for t in tried.values() if t is not None}) > 1)


def _next_size(tried: dict[float, int | None], size: float, got: int, seek: float,
               aim: int | None, goal: float, options: TargetOptions, between,
               guess) -> float | None:
    """``fit``'s next size to try, or None when there is none to try: a bracket of the goal
    cut in the square of the size (down to the grid, or to no size that can come closer), or
    a step towards it (along ``guess``'s line, or by the square root of wanted over got)."""
    low, high = options.min_font_size, options.max_font_size
    known = sorted((s, t) for s, t in tried.items() if t is not None)
    below = [(s, t) for s, t in known if t < seek]
    above = [(s, t) for s, t in known if t > seek]
    if below and above:  # the goal is bracketed: interpolate in the square of size
        (s0, t0), (s1, t1) = below[-1], above[0]
        if s1 - s0 <= FONT_STEP + 1e-9 or not _worth(between, s0, s1, aim, goal, known):
            return None
        share = (seek - t0) / (t1 - t0)
        nxt = math.sqrt(s0 * s0 + share * (s1 * s1 - s0 * s0))
        return min(max(nxt, s0 + FONT_STEP), s1 - FONT_STEP)
    ahead = guess(known, seek) if guess is not None and len(known) > 1 else None
    nxt = ahead if ahead is not None else size * math.sqrt(seek / got)
    if (nxt >= high and size >= high) or (nxt <= low and size <= low):
        return None
    return nxt


def _fit_record(options: TargetOptions, text_tokens: int | None, goal: float | None,
                tried: dict[float, int | None], best: float, off: float) -> dict[str, Any]:
    """A target's row record: what was asked, what the size ``best`` met, and why it is
    off target by more than the tolerance, when it is."""
    low, high = options.min_font_size, options.max_font_size
    tokens = tried[best]
    record: dict[str, Any] = {"model": options.ratio_model}
    if options.vision_budget is not None:
        record["vision_budget"] = options.vision_budget
    else:
        record["target_ratio"] = options.target_ratio
    record["text_tokens"] = text_tokens
    record.update({"font_size": best, "vision_tokens": tokens, "layouts": len(tried)})
    if goal:
        record["exact"] = tokens == round(goal)
    if tokens and text_tokens is not None:
        record["ratio"] = round(text_tokens / tokens, 4)
    record["within"] = bool(goal) and off <= TOLERANCE
    if record["within"]:
        return record
    # a bound's size that counts as the best one: the bound is why (where the count moves)
    moves = len({t for t in tried.values() if t is not None}) > 1
    if not goal:
        record["reason"] = "the item has no text tokens to make a ratio of"
    elif tokens is None:
        record["reason"] = f"{options.ratio_model}'s processor refuses these pages"
    elif (best >= high or moves and tried.get(high) == tokens) and tokens < goal:
        record["reason"] = (f"even at the largest size, {high:g} pt, the pages take "
                            f"{tokens} vision tokens, under the {goal:.0f} wanted")
    elif (best <= low or moves and tried.get(low) == tokens) and tokens > goal:
        record["reason"] = (f"even at the smallest size, {low:g} pt, the pages take "
                            f"{tokens} vision tokens, over the {goal:.0f} wanted")
    else:
        record["reason"] = (f"{options.ratio_model}'s tokens come in steps: the nearest "
                            f"size, {best:g} pt, gives {tokens} against {goal:.0f} wanted")
    return record


def _worth(between, s0: float, s1: float, aim: int | None, goal: float,
           known: list[tuple[float, int]]) -> bool:
    """Whether a size between ``s0`` and ``s1`` may give the aim, or a count nearer the goal
    than any known: always, unless ``between`` knows the counts there."""
    counts = between(s0, s1) if between is not None else None
    if counts is None:
        return True
    if aim:
        return aim in counts
    nearest = min(abs(t - goal) for _, t in known)
    return any(abs(c - goal) < nearest for c in counts)


WIDTH_MOVES = 8  # page widths tried each side of the style's, in the rule's steps
RATIO_CLOSE = 0.01  # a ratio this close is left as the font size met it (a budget: exact only)


def close_enough(record: dict[str, Any]) -> bool:
    """Whether a fit needs no width moved: a budget met exactly; a ratio met exactly or
    within 1 % (a ratio's goal, text tokens over R, is rarely a whole count). A target out of
    the font sizes' reach is tried at other widths too: a page of another width may reach it
    (measured: 2 of 30 long contexts at a budget of 256)."""
    if record.get("exact"):
        return True
    ratio, text, tokens = (record.get("target_ratio"), record.get("text_tokens"),
                           record.get("vision_tokens"))
    if ratio and text and tokens:
        return abs(tokens - text / ratio) / (text / ratio) <= RATIO_CLOSE
    return False


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
    page's when it varies (the rule's count growing with the height). None: the rule refuses
    such pages, or its count does not grow with the height (``grows``)."""
    whole = rule(width, pages.full)
    if whole is None or (pages.last_varies and not grows(rule, width, pages.full)):
        return None
    best: int | None = None
    for count in range(max(1, pages.count - 1), pages.count + 2):
        before = (count - 1) * whole
        lasts = _around(lambda h: rule(width, h), goal - before, pages.full) \
            if pages.last_varies else [whole]
        for last in lasts:
            total = before + last
            if best is None or (abs(total - goal), total) < (abs(best - goal), best):
                best = total
    return best


def grows(rule, width: int, high: int) -> bool:
    """Whether ``rule``'s count for pages ``width`` px wide seems to grow with the height,
    read at doubling heights up to ``high``: a processor that scales a small page up to its
    least pixels (Qwen3-VL's 65,536) counts more for a thin page than for a taller one, and
    is not predicted."""
    counts = [c for c in (rule(width, min(2 ** n, high)) for n in range(high.bit_length() + 1))
              if c is not None]
    return all(a <= b for a, b in zip(counts, counts[1:], strict=False))


def _around(count_at, want: float, high: int) -> list[int]:
    """The counts of the heights either side of where ``count_at(height)`` (growing with the
    height; None, a refused page, counts as too few) first reaches ``want``, in [1, high]."""
    lo, hi = 1, high
    while lo < hi:  # the least height whose count reaches want (high when none does)
        mid = (lo + hi) // 2
        got = count_at(mid)
        if got is not None and got >= want:
            hi = mid
        else:
            lo = mid + 1
    return [c for c in (count_at(lo - 1) if lo > 1 else None, count_at(lo)) if c is not None]


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
        self.line = [(size, probe_at(size, None)) for size in near if probe_at(size, None)]
        self.scale = getattr(base, "horizontal_scale", 1.0)
        self.step = width_step(options.ratio_model or "") or 1
        self.crop = getattr(base, "crop", "none")
        full = pixels(base.page_height, base.ppi) if len(seen) == 1 else seen[0][1]
        self.pages = Pages(full, len(seen), last_varies=self.crop != "none")
        self.filled = pixels(base.page_width * self.scale, base.ppi)
        self.widest = max(w for w, _ in seen)
        tokens = found.vision_tokens
        self.stuck = tokens is not None and (
            (found.font_size <= options.min_font_size and tokens > goal)
            or (found.font_size >= options.max_font_size and tokens < goal))
        self.same: dict[int, int] = {}  # each side: the furthest width step as the style's
        self.near = cache(lambda width: nearest_count(rule, width, self.pages, goal))

    @classmethod
    def of(cls, options: TargetOptions, rule, base, seen, found: Fit, probe_at,
           sizes: Sequence[float] = ()):
        """The prediction, or None where there is none: no pages, not a page renderer's
        options, no goal. ``sizes``: the sizes tried at the style's width."""
        record = found.record
        goal = record.get("vision_budget") or (
            record["text_tokens"] / record["target_ratio"] if record.get("text_tokens")
            else None)
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


def fit_width(options: TargetOptions, text_tokens: int | None, tokens_at, found: Fit,
              page_width: float, ppi: float, predict: WidthPrediction | None = None,
              between=None, guess=None) -> Fit:
    """``found`` (the font size alone) made exact, if it can be, by moving the page width in
    the ratio model's steps too: the widths nearest the style's first, each with its own
    font size search; the first exact one (a ratio: within 1 %) is kept, else the closest
    (``found`` if none is closer). ``predict(inches)`` (None: the style's width) says before
    any layout the count nearest the target the rule can give at that width (None when it
    cannot say): a width that cannot come closer than the best so far is not laid out, and a
    width's search seeks that count (``between`` and ``guess``: ``fit``'s, at a width).
    The record says what moved, or why the rule cannot be met exactly."""
    model = options.ratio_model or ""
    step = width_step(model)
    if step is None:
        why = WHY_NOT_EXACT.get(RULE_ALIASES.get(model, model))
        if why and not found.record["within"]:
            found.record["reason"] += f"; {model} cannot be met exactly: {why}"
        return found
    base = round(page_width * ppi)
    layouts = found.layouts
    goal = found.record.get("vision_budget") or (
        text_tokens / options.target_ratio if text_tokens and options.target_ratio else 0)

    def off(tokens: int | None) -> float:
        return math.inf if tokens is None else abs(tokens - goal)

    best = found
    aim = predict(None) if predict else None
    if aim is not None and off(aim) < off(found.vision_tokens):  # the style's width first
        again = fit(options, text_tokens, tokens_at, start=found.font_size, aim=aim,
                    between=between and (lambda s0, s1: between(s0, s1, None)),
                    guess=guess and (lambda known, seek: guess(known, seek, None)))
        layouts += again.layouts
        if off(again.vision_tokens) < off(found.vision_tokens):
            best = Fit(again.font_size, again.vision_tokens, again.layouts, again.record)
    def meets(tokens: int | None) -> bool:
        return tokens is not None and close_enough({**found.record, "vision_tokens": tokens,
                                                    "exact": tokens == round(goal)})

    order = [k for k in sorted(range(-WIDTH_MOVES, WIDTH_MOVES + 1), key=lambda k: (abs(k), k))
             if k and 1 < round((base + k * step) / ppi, 4) <= 40]
    searched: set[int] = set()
    # first the widths whose count is predicted to meet the target, nearest first; then the
    # others, nearest first, where the prediction is nearer than the best so far
    for only_met in (True, False):
        for k in order:
            if close_enough(best.record):
                break
            inches = round((base + k * step) / ppi, 4)
            aim = predict(inches) if predict else None
            if k in searched or (only_met and not meets(aim)):
                continue
            if aim is not None and off(aim) >= off(best.vision_tokens):
                continue  # no closer count at this width: not laid out
            searched.add(k)
            start = (predict.start(inches, aim) if predict and aim is not None else None)
            moved = fit(options, text_tokens, lambda size, w=inches: tokens_at(size, w),
                        start=start or found.font_size, aim=aim,
                        between=between and (lambda s0, s1, w=inches: between(s0, s1, w)),
                        guess=guess and (lambda known, seek, w=inches: guess(known, seek, w)))
            layouts += moved.layouts
            if off(moved.vision_tokens) < off(best.vision_tokens):
                best = Fit(moved.font_size, moved.vision_tokens, moved.layouts, moved.record,
                           inches)
    record = dict(best.record)
    record["layouts"] = layouts
    record["moved"] = ["font_size", "page_width"] if best.page_width is not None \
        else ["font_size"]
    if best.page_width is not None:
        record["page_width"] = best.page_width
    return Fit(best.font_size, best.vision_tokens, layouts, record, best.page_width)


PAGE_FIT_STEP = 0.5  # points: the sizes a page fit tries (Text or Pixels' own steps below 24)


def fit_pages(options: TargetOptions, pages_at) -> Fit:
    """The largest font size, in half points within the bounds, at which the item takes at
    most ``options.fit_pages`` pages (``pages_at(size)``; None when the size cannot be
    drawn): a search over the sizes, which take more pages as they grow."""
    wanted = options.fit_pages or 1
    low = math.ceil(options.min_font_size / PAGE_FIT_STEP)
    high = math.floor(options.max_font_size / PAGE_FIT_STEP)
    tried: dict[float, int | None] = {}

    def fits(step: int) -> bool:
        size = step * PAGE_FIT_STEP
        if size not in tried:
            tried[size] = pages_at(size)
        got = tried[size]
        return got is not None and got <= wanted

    best = None
    if fits(low):
        lo, hi = low, high  # fits(lo) holds: the largest step that fits is in [lo, hi]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid - 1
        best = lo * PAGE_FIT_STEP
    size = best if best is not None else low * PAGE_FIT_STEP
    record: dict[str, Any] = {"fit_pages": wanted, "font_size": size, "pages": tried[size],
                              "layouts": len(tried), "within": best is not None}
    if best is None:
        record["reason"] = (f"even at the smallest size, {size:g} pt, the item takes "
                            f"{tried[size]} pages, over the {wanted} wanted")
    return Fit(size, None, len(tried), record)
