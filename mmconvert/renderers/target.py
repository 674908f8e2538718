"""Pages drawn to a target: the font size (within bounds, the PPI fixed) at which an item's
compression ratio for a model (text tokens over vision tokens) is the one asked for, or at
which its pages take a given number of vision tokens (DeepSeek-OCR's budgets).

The search lays the text out, never rasterising: a layout gives the pages' sizes, and the
model's rule (``stats.TOKEN_RULES``) their vision tokens. Vision tokens grow roughly with the
area the text covers, so with the square of the font size: each step scales the size by the
square root of wanted over got (a secant step once two sizes are known), kept inside the
bounds; the size closest to the target is kept. Rules count in steps (tiles, 28 px cells), so
a target inside a step cannot be met exactly: the row says how close it came and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, model_validator

from ..options import OPTIONS
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


def fit(options: TargetOptions, text_tokens: int | None, tokens_at, start: float = 12.0) -> Fit:
    """The font size within the bounds whose vision tokens (``tokens_at(size)``: the pages'
    tokens for the model, None when its rule refuses a page) come closest to the target,
    searched from ``start`` (the style's own size)."""
    goal = (options.vision_budget if options.vision_budget is not None
            else text_tokens / options.target_ratio if text_tokens and options.target_ratio
            else None)
    low, high = options.min_font_size, options.max_font_size
    record: dict[str, Any] = {"model": options.ratio_model}
    if options.vision_budget is not None:
        record["vision_budget"] = options.vision_budget
    else:
        record["target_ratio"] = options.target_ratio
    record["text_tokens"] = text_tokens
    tried: dict[float, int | None] = {}

    def measure(size: float) -> int | None:
        size = on_grid(size, low, high)
        if size not in tried:
            tried[size] = tokens_at(size)
        return tried[size]

    def error(size: float) -> float:
        got = tried[size]
        return math.inf if got is None or not goal else abs(got - goal) / goal

    size = min(high, max(low, start))
    if goal:
        for _ in range(MAX_LAYOUTS):
            size = on_grid(size, low, high)
            got = measure(size)
            if got is None or error(size) <= TOLERANCE / 2:
                break
            known = sorted((s, t) for s, t in tried.items() if t is not None)
            below = [(s, t) for s, t in known if t < goal]
            above = [(s, t) for s, t in known if t > goal]
            if below and above:  # the goal is bracketed: interpolate in the square of size
                (s0, t0), (s1, t1) = below[-1], above[0]
                if s1 - s0 <= FONT_STEP + 1e-9:
                    break
                share = (goal - t0) / (t1 - t0)
                nxt = math.sqrt(s0 * s0 + share * (s1 * s1 - s0 * s0))
                nxt = min(max(nxt, s0 + FONT_STEP), s1 - FONT_STEP)
            else:
                nxt = size * math.sqrt(goal / got)
                if (nxt >= high and size >= high) or (nxt <= low and size <= low):
                    break
            size = nxt
    else:
        measure(size)
    best = min(tried, key=lambda s: (error(s), abs(s - start))) if goal else next(iter(tried))
    tokens = tried[best]
    record.update({"font_size": best, "vision_tokens": tokens, "layouts": len(tried)})
    if goal:
        record["exact"] = tokens == round(goal)
    if tokens and text_tokens is not None:
        record["ratio"] = round(text_tokens / tokens, 4)
    off = error(best) if goal else math.inf
    record["within"] = off <= TOLERANCE
    if not record["within"]:
        if not goal:
            record["reason"] = "the item has no text tokens to make a ratio of"
        elif tokens is None:
            record["reason"] = f"{options.ratio_model}'s processor refuses these pages"
        elif best >= high and tokens < goal:
            record["reason"] = (f"even at the largest size, {high:g} pt, the pages take "
                                f"{tokens} vision tokens, under the {goal:.0f} wanted")
        elif best <= low and tokens > goal:
            record["reason"] = (f"even at the smallest size, {low:g} pt, the pages take "
                                f"{tokens} vision tokens, over the {goal:.0f} wanted")
        else:
            record["reason"] = (f"{options.ratio_model}'s tokens come in steps: the nearest "
                                f"size, {best:g} pt, gives {tokens} against {goal:.0f} wanted")
    return Fit(best, tokens, len(tried), record,
               responsive=len({t for t in tried.values() if t is not None}) > 1)


WIDTH_MOVES = 8  # page widths tried each side of the style's, in the rule's steps
RATIO_CLOSE = 0.01  # a ratio this close is left as the font size met it (a budget: exact only)


def close_enough(record: dict[str, Any]) -> bool:
    """Whether a font-size fit needs no width moved: a budget met exactly; a ratio met
    exactly or within 1 % (a ratio's goal, text tokens over R, is rarely a whole count). A
    target out of the font sizes' reach is tried at other widths too: a page of another
    width may reach it (measured: 2 of 30 long contexts at a budget of 256)."""
    if record.get("exact"):
        return True
    ratio, text, tokens = (record.get("target_ratio"), record.get("text_tokens"),
                           record.get("vision_tokens"))
    if ratio and text and tokens:
        return abs(tokens - text / ratio) / (text / ratio) <= RATIO_CLOSE
    return False


def fit_width(options: TargetOptions, text_tokens: int | None, tokens_at, found: Fit,
              page_width: float, ppi: float) -> Fit:
    """``found`` (the font size alone) made exact, if it can be, by moving the page width in
    the ratio model's steps too: the widths nearest the style's first, each with its own
    font size search; the first exact one is kept, else the closest (``found`` if none is
    closer). The record says what moved, or why the rule cannot be met exactly."""
    model = options.ratio_model or ""
    step = width_step(model)
    if step is None:
        why = WHY_NOT_EXACT.get(RULE_ALIASES.get(model, model))
        if why and not found.record["within"]:
            found.record["reason"] += f"; {model} cannot be met exactly: {why}"
        return found
    base = round(page_width * ppi)
    layouts = found.layouts
    best = found
    goal = round(found.record.get("vision_budget") or (
        text_tokens / options.target_ratio if text_tokens and options.target_ratio else 0))
    for k in sorted(range(-WIDTH_MOVES, WIDTH_MOVES + 1), key=lambda k: (abs(k), k)):
        pixels = base + k * step
        inches = round(pixels / ppi, 4)
        if k == 0 or not 1 < inches <= 40:
            continue
        moved = fit(options, text_tokens, lambda size, w=inches: tokens_at(size, w),
                    start=found.font_size)
        layouts += moved.layouts
        if moved.vision_tokens is None:
            continue
        closer = abs(moved.vision_tokens - goal) < abs((best.vision_tokens or 0) - goal)
        if moved.record.get("exact") or closer:
            best = Fit(moved.font_size, moved.vision_tokens, moved.layouts, moved.record,
                       inches)
            if moved.record.get("exact"):
                break
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
