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
rule before it is laid out (``prediction.WidthPrediction``): a width that cannot come closer
than the best so far is skipped, and the others seek the count predicted. Where the style's
width cannot meet the target, the widths are tried first after two sizes there
(``styled.StyledJob.width_first``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from ..options import OPTIONS
from ..vision_tokens import RULE_ALIASES, WHY_NOT_EXACT, token_rule, width_step

if TYPE_CHECKING:
    from .prediction import WidthPrediction

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


def first_size(options: TargetOptions, start: float) -> float:
    """The size a search from ``start`` (the style's own size) tries first."""
    low, high = options.min_font_size, options.max_font_size
    return on_grid(min(high, max(low, start)), low, high)


def target_goal(options: TargetOptions, text_tokens: int | None) -> float | None:
    """The vision tokens a target asks for: the budget, or the text tokens over the ratio
    (None without text tokens)."""
    if options.vision_budget is not None:
        return options.vision_budget
    return text_tokens / options.target_ratio if text_tokens and options.target_ratio else None


def fit(options: TargetOptions, text_tokens: int | None, tokens_at, start: float = 12.0,
        aim: int | None = None, between=None, guess=None, layouts: int = MAX_LAYOUTS) -> Fit:
    """The font size within the bounds whose vision tokens (``tokens_at(size)``: the pages'
    tokens for the model, None when its rule refuses a page) come closest to the target,
    searched from ``start`` (the style's own size). Without ``aim`` the search stops within
    half the tolerance; with it (the count nearest the target the rule can give these pages,
    ``prediction.nearest_count``) it seeks that count and stops only there.
    ``between(s0, s1)`` (None: no such knowledge) gives the counts the sizes between two
    tried ones can take, known from the rule: a bracket none of whose counts is the aim, or
    nearer the goal than the best so far, is not cut further. ``guess(known, seek)`` (None:
    no such knowledge) predicts the size that gives ``seek`` from the sizes tried so far,
    ``(size, count)`` in size order, for a step that does not yet bracket it."""
    goal = target_goal(options, text_tokens)
    low, high = options.min_font_size, options.max_font_size
    tried: dict[float, int | None] = {}

    def error(size: float) -> float:
        got = tried[size]
        return math.inf if got is None or not goal else abs(got - goal) / goal

    size = first_size(options, start)
    for _ in range(layouts if goal else 1):
        if size not in tried:
            tried[size] = tokens_at(size)
        got = tried[size]
        if not goal or got is None or (got == aim if aim else error(size) <= TOLERANCE / 2):
            break
        nxt = _next_size(tried, size, got, aim or goal, aim, goal, options, between, guess)
        if nxt is None:
            break
        size = on_grid(nxt, low, high)
    best = min(tried, key=lambda s: (error(s), abs(s - start))) if goal else next(iter(tried))
    responsive = len({t for t in tried.values() if t is not None}) > 1
    record = _fit_record(options, text_tokens, goal, tried, best, error(best), responsive)
    return Fit(best, tried[best], len(tried), record, responsive=responsive)


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
                tried: dict[float, int | None], best: float, off: float,
                moves: bool) -> dict[str, Any]:
    """A target's row record: what was asked, what the size ``best`` met, and why it is
    off target by more than the tolerance, when it is (``moves``: the count moved with the
    size)."""
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


def would_meet(record: dict[str, Any], tokens: int | None, goal: float) -> bool:
    """Whether a fit recorded as ``record`` would need no width moved (``close_enough``) with
    ``tokens`` vision tokens (a width's predicted count) against ``goal``."""
    return tokens is not None and close_enough({**record, "vision_tokens": tokens,
                                                "exact": tokens == round(goal)})


def fit_width(options: TargetOptions, text_tokens: int | None, tokens_at, found: Fit,
              page_width: float, ppi: float, predict: WidthPrediction | None = None,
              between=None, guess=None, met_only: bool = False) -> Fit:
    """``found`` (the font size alone) made exact, if it can be, by moving the page width in
    the ratio model's steps too: the widths nearest the style's first, each with its own
    font size search; the first exact one (a ratio: within 1 %) is kept, else the closest
    (``found`` if none is closer). ``predict(inches)`` (None: the style's width) says before
    any layout the count nearest the target the rule can give at that width (None when it
    cannot say): a width that cannot come closer than the best so far is not laid out, and a
    width's search seeks that count (``between`` and ``guess``: ``fit``'s, at a width).
    ``met_only``: only the moved widths predicted to meet the target are searched, the
    style's width not refined.
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
    goal = target_goal(options, text_tokens) or 0

    def off(tokens: int | None) -> float:
        return math.inf if tokens is None else abs(tokens - goal)

    best = found
    aim = predict(None) if predict else None
    # the style's width first (``met_only``: a first try at the moved widths that can meet
    # the target, which the caller keeps only if one does)
    if not met_only and aim is not None and off(aim) < off(found.vision_tokens):
        again = fit(options, text_tokens, tokens_at, start=found.font_size, aim=aim,
                    between=between and (lambda s0, s1: between(s0, s1, None)),
                    guess=guess and (lambda known, seek: guess(known, seek, None)))
        layouts += again.layouts
        if off(again.vision_tokens) < off(found.vision_tokens):
            best = Fit(again.font_size, again.vision_tokens, again.layouts, again.record)

    order = [k for k in sorted(range(-WIDTH_MOVES, WIDTH_MOVES + 1), key=lambda k: (abs(k), k))
             if k and 1 < round((base + k * step) / ppi, 4) <= 40]
    searched: set[int] = set()
    predicted: dict[int, int | None] = {}  # each width's, made once for both passes
    # first the widths whose count is predicted to meet the target, nearest first; then the
    # others, nearest first, where the prediction is nearer than the best so far
    for only_met in (True,) if met_only else (True, False):
        for k in order:
            if close_enough(best.record):
                break
            inches = round((base + k * step) / ppi, 4)
            if k not in predicted:
                predicted[k] = predict(inches) if predict else None
            aim = predicted[k]
            if k in searched or (only_met and not would_meet(found.record, aim, goal)):
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
