"""What ``mmconvert eval`` reports: each item's outcome, the scores by condition, subset,
page count and grid cell with their paired comparisons, compression, and the tables and heat
maps ``results.json`` is shown as."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from ..counting import figures_of, item_tokens, ratio_summary
from ..plots import write_figure
from ..rows import Row
from ..scoring.answers import VERSION
from ..scoring.spec import (
    Scored,
    metric_name,
)
from ..tokens import load_tokenizer
from ..vision_tokens import rules_for
from .paired import mcnemar_exact, paired_bootstrap

if TYPE_CHECKING:
    from .run import EvalOptions

# what --modality asks; "transcribe" is eval --probe transcribe's (the shown pages, asked to
# be transcribed, scored by Fox's metrics against the text they hold)
Modality = Literal["image", "blank", "text", "text-budget", "text-image"]
Condition = Literal["image", "blank", "text", "text-budget", "text-image", "transcribe"]
CONDITIONS: tuple[Condition, ...] = ("image", "blank", "text", "text-budget", "text-image",
                                     "transcribe")

# what a curve's or frontier's point reports with --probe transcribe, and the line its table
# ends with
PRECISION = "transcription precision"
READ_NOTE = ("read: the pages' transcription precision (Fox's: the share of a page's distinct "
             "words the reply holds), --probe transcribe")


def headline(probe: str | None) -> tuple[Condition, str]:
    """The condition a point's figure is read from, and what that figure is: the image's
    accuracy, or with ``--probe transcribe`` its pages' transcription precision (Fox's, as
    DeepSeek-OCR's compression table reports it)."""
    return ("transcribe", PRECISION) if probe == "transcribe" else ("image", "accuracy")


def modality_refused(probe: str | None, modality: Sequence[str], scores: str = ""
                     ) -> str | None:
    """Why a curve's or frontier's ``--modality`` cannot be asked, or None: text-image, which
    is occlusions' own (``scores`` says first what the command scores), or leaving out the
    condition each point's figure is read from (a probe asks for its own)."""
    if "text-image" in modality:
        return f"--modality: {scores}text-image is occlusions' own"
    condition = headline(probe)[0]
    if probe is not None or condition in modality:
        return None
    return (f"--modality: each point's figure is its {condition} condition's score; give "
            f"{condition} among the conditions")


@dataclass
class Outcome:
    id: str
    condition: Condition
    subset: str
    pages: int
    response: str | None
    scored: Scored | None
    error: str | None = None
    # the item's cell of a two-way grid (metadata.grid: {row name: value, column name: value},
    # a haystack's length and depth), or None
    cell: tuple[tuple[str, str], tuple[str, str]] | None = None

    def as_row(self) -> dict[str, Any]:
        scored = self.scored
        return {"id": self.id, "condition": self.condition, "subset": self.subset,
                "pages": self.pages, "response": self.response,
                "answer": scored.answer if scored else None,
                "parsed": scored.parsed if scored else False,
                "score": scored.value if scored else None,
                **({"extra": scored.extra} if scored and scored.extra else {}),
                **({"error": self.error} if self.error else {})}




# the share of unparsed replies (percent) past which a table says so in a warning line: an
# accuracy where many replies were unparsed measures the answer format, not the reading
UNPARSED_WARNING = 10.0


def unparsed_shares(results: dict[str, Any]) -> dict[str, float | None]:
    """Each condition's share of unparsed replies (percent), from a results.json."""
    overall = results.get("overall") or {}
    return {condition: overall[condition].get("unparsed_share")
            for condition in results.get("conditions") or [] if condition in overall}


def worst_unparsed(shares: dict[str, float | None] | None) -> float | None:
    found = [share for share in (shares or {}).values() if share is not None]
    return max(found) if found else None


def unparsed_warnings(label: str, shares: dict[str, float | None] | None) -> list[str]:
    """A warning line for each condition of ``label`` whose unparsed share passes
    ``UNPARSED_WARNING``."""
    return [f"warning: {label}: {share:.1f} % of the {condition} replies were unparsed "
            f"(scored 0: no answer in a form the scorer reads; above {UNPARSED_WARNING:g} %)"
            for condition, share in (shares or {}).items()
            if share is not None and share > UNPARSED_WARNING]


def scoring_summary(rows: list[Row], outcomes: list[Outcome],
                    options: EvalOptions) -> dict[str, Any]:
    """What the items were scored by: the extractor's version, each metric and its items,
    the metric of each subset; for lm-eval generation tasks, every filter's metrics per
    condition (percent) and the task's primary one, as lm-eval's own table has them."""
    names = {row.id: metric_name(row, options.protocol) for row in rows}
    by_subset: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        by_subset[row.subset].add(names[row.id])
    out: dict[str, Any] = {
        "extractor": f"mmconvert.scoring.answers {VERSION}",
        "metrics": dict(sorted(Counter(names.values()).items())),
        "by_subset": {k: sorted(v)[0] if len(v) == 1 else sorted(v)
                      for k, v in sorted(by_subset.items())},
        **({"judge": options.judge_model} if options.judge_model else {})}
    filters: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    primary = None
    for o in outcomes:
        if o.scored is not None and "lm_eval" in o.scored.extra:
            for key, value in o.scored.extra["lm_eval"].items():
                filters[o.condition][key].append(value)
            primary = primary or o.scored.extra.get("primary")
    if filters:
        out["lm_eval"] = {"primary": primary, **{
            condition: {key: round(100 * sum(v) / len(v), 4) for key, v in sorted(keys.items())}
            for condition, keys in filters.items()}}
    return out


def compression_of(rows: list[Row], options: EvalOptions,
                   outcomes: Sequence[Outcome] = ()) -> dict[str, Any]:
    """What the evaluated items' images cost beside what they score: vision tokens per item
    under each model's rule and, with ``--tokenizer``, text tokens and the ratio (text tokens
    over vision tokens), overall and per subset, as ``mmconvert stats`` counts them, and the
    image score by ratio: the items in four bins of equal count per model."""
    tokenizer = load_tokenizer(options.tokenizer) if options.tokenizer else None
    rules = rules_for(options.ratio_models)
    items = [item_tokens(row, rules, tokenizer) for row in rows]
    out: dict[str, Any] = {"vision_tokens_per_item": {
        name: figures_of([i["tokens"][name] for i in items]) for name in rules}}
    if tokenizer is not None:
        out.update(ratio_summary(items, tokenizer, list(rules)))
        scores = {o.id: o.scored.value for o in outcomes
                  if o.condition == "image" and o.scored is not None}
        out["image_score_by_ratio"] = {name: score_by_ratio(items, scores, name)
                                       for name in rules}
    return out


def score_by_ratio(items: list[dict[str, Any]], scores: dict[str, float], name: str,
                   bins: int = 4) -> list[dict[str, Any]]:
    """The image score (percent) of the scored items in ``bins`` bins of (nearly) equal count
    by their ratio for model ``name``, lowest ratio first; an item without a ratio or a score
    is in none."""
    pairs = sorted((i["ratio"][name], scores[i["id"]]) for i in items
                   if i["ratio"][name] is not None and i["id"] in scores)
    out = []
    for k in range(min(bins, len(pairs))):
        part = pairs[k * len(pairs) // bins:(k + 1) * len(pairs) // bins]
        if part:
            out.append({"ratio": [part[0][0], part[-1][0]], "n": len(part),
                        "score": round(100 * sum(v for _, v in part) / len(part), 4)})
    return out




def grid_cell(row: Row) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """((row name, value), (column name, value)) of an item's ``metadata.grid``, or None."""
    grid = row.metadata.get("grid")
    if not isinstance(grid, dict) or len(grid) != 2:
        return None
    return tuple((str(name), f"{value:g}" if isinstance(value, float) else str(value))
                 for name, value in grid.items())  # type: ignore[return-value]




def per_page(outcomes: list[Outcome]) -> dict[str, Any]:
    """Transcription figures over pages, not items: a page asked alone (``--probe
    transcribe`` on an item whose pages' texts are recorded) or an item of one page counts
    once; ``whole`` counts the items of several pages asked at once (their pages' own texts
    are not recorded), which no page figure holds."""
    pages, whole = [], 0
    for o in outcomes:
        extra = cast(Scored, o.scored).extra
        if "pages" in extra:
            pages += extra["pages"]
        elif o.pages == 1:
            pages.append({"score": cast(Scored, o.scored).value, **extra})
        else:
            whole += 1
    out: dict[str, Any] = {"n": len(pages), "whole": whole}
    for name in ("score", "recall", "f_measure", "edit_distance"):
        found = [page[name] for page in pages if page.get(name) is not None]
        out[name] = round(100 * sum(found) / len(found), 4) if found else None
    return out


def summarise(outcomes: list[Outcome], conditions: list[Condition], options: EvalOptions,
              run: Path, unscored: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """results.json: per condition the score (percent), n, unparsed share and errors; the
    paired image - text delta with its bootstrap interval and, for right/wrong scores, the
    exact McNemar p; the same per subset and per page count; the items with no gold answer,
    which no figure counts."""
    def group(members: list[Outcome]) -> dict[str, Any]:
        by_condition: dict[str, dict[str, Outcome]] = defaultdict(dict)
        for o in members:
            by_condition[o.condition][o.id] = o
        out: dict[str, Any] = {}
        for condition in conditions:
            done = [o.scored for o in by_condition[condition].values() if o.scored is not None]
            values = [scored.value for scored in done]
            unparsed = sum(1 for scored in done if not scored.parsed)
            out[condition] = {
                "score": round(100 * sum(values) / len(values), 4) if values else None,
                "n": len(values), "unparsed": unparsed,
                "unparsed_share": round(100 * unparsed / len(values), 4) if values else None,
                "errors": sum(1 for o in by_condition[condition].values() if o.scored is None)}
            f1 = [scored.extra["f1"] for scored in done if "f1" in scored.extra]
            if f1 and len(f1) == len(done):  # SQuAD's token F1 beside its exact match
                out[condition]["f1"] = round(100 * sum(f1) / len(f1), 4)
            read = [scored.extra for scored in done if "edit_distance" in scored.extra]
            if read:  # a transcription: the score is Fox's precision; its other figures
                for name in ("recall", "f_measure", "edit_distance"):
                    found = [extra[name] for extra in read if extra[name] is not None]
                    out[condition][name] = round(100 * sum(found) / len(found), 4) \
                        if found else None
                out[condition]["cut"] = sum(1 for extra in read if extra.get("cut"))
                out[condition]["per_page"] = per_page(
                    [o for o in by_condition[condition].values() if o.scored is not None])
            spans = [scored.extra for scored in done if "jaccard" in scored.extra]
            if spans:  # occlusions: VCR's figures, over spans as its tables are
                for name in ("exact_match", "jaccard"):
                    flat = [v for extra in spans for v in extra[name]]
                    out[condition][f"{name}_spans"] = round(100 * sum(flat) / len(flat), 4)
        # image against the text twin (delta), against the text at the image's budget, and
        # against blank pages (what reading the pages added to what the model scores without)
        for other, prefix in (("text", ""), ("text-budget", "budget_"), ("blank", "blank_")):
            if "image" not in conditions or other not in conditions:
                continue
            paired = [(image_scored, text_scored) for i, o in by_condition["image"].items()
                      if (image_scored := o.scored) is not None and i in by_condition[other]
                      and (text_scored := by_condition[other][i].scored) is not None]
            image = [pair[0].value for pair in paired]
            text = [pair[1].value for pair in paired]
            out[f"{prefix}paired_n"] = len(paired)
            if paired:
                out[f"{prefix}delta"] = round(100 * (sum(image) - sum(text)) / len(paired), 4)
                low, high = paired_bootstrap(image, text, seed=options.seed)
                out[f"{prefix}delta_ci95"] = [round(100 * low, 4), round(100 * high, 4)]
                if all(v in (0.0, 1.0) for v in image + text):
                    out[f"{prefix}mcnemar_p"] = mcnemar_exact([v == 1.0 for v in image],
                                                              [v == 1.0 for v in text])
            else:
                out[f"{prefix}delta"], out[f"{prefix}delta_ci95"] = None, None
        return out

    by_subset: dict[str, list[Outcome]] = defaultdict(list)
    by_pages: dict[int, list[Outcome]] = defaultdict(list)
    by_cell: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_subset[o.subset].append(o)
        by_pages[o.pages].append(o)
        if o.cell is not None:
            by_cell[o.cell].append(o)
    judge = ({"model": options.judge_model, "rubric": "0-10, SCORE: N (scoring.RUBRIC)",
              "applies_to": "items without options, spans or a paper's scorer"}
             if options.judge_model else None)
    return {"run": str(run.resolve()), "model": options.model, "base_url": options.base_url,
            "conditions": list(conditions), "protocol": options.protocol, "seed": options.seed,
            "judge": judge,
            "unscored": {"n": len(unscored or []), "items": unscored or []},
            "overall": group(outcomes),
            "subsets": {name: group(members) for name, members in sorted(by_subset.items())},
            "pages": {str(n): group(members) for n, members in sorted(by_pages.items())},
            **({"grid": grid_of(by_cell, group)} if by_cell else {})}


def option_order(rows: list[Row], outcomes: list[Outcome]) -> dict[str, Any] | None:
    """For a run rendered with ``--shuffle-options``: of the items whose gold option the
    shuffle moved to another letter, how often the model chose the gold option's content (at
    its new letter), the letter the gold had before the shuffle (now another option: a choice
    that follows the letter, as a memorised answer would), or another; per condition. None
    for a run with no shuffled item."""
    if not any("original_answer" in row.metadata for row in rows):
        return None
    moved = {row.id: (row.answer, row.metadata["original_answer"]) for row in rows
             if isinstance(row.metadata.get("original_answer"), str)
             and row.metadata["original_answer"] != row.answer}
    out: dict[str, Any] = {"moved": len(moved)}
    for condition in dict.fromkeys(o.condition for o in outcomes):
        chosen = [(o.scored.answer, moved[o.id]) for o in outcomes
                  if o.condition == condition and o.id in moved and o.scored is not None]
        n = len(chosen)
        content = sum(1 for answer, (gold, _) in chosen if answer == gold)
        letter = sum(1 for answer, (_, old) in chosen if answer == old)
        unread = sum(1 for answer, _ in chosen if answer is None)
        out[condition] = {
            "n": n, "content": round(100 * content / n, 4) if n else None,
            "letter": round(100 * letter / n, 4) if n else None,
            "other": round(100 * (n - content - letter - unread) / n, 4) if n else None,
            "unparsed": round(100 * unread / n, 4) if n else None}
    return out


def grid_of(by_cell: dict[tuple, list[Outcome]], group) -> dict[str, Any]:
    """The figures of each cell of a two-way grid (a haystack's length × depth), rows and
    columns in the items' order."""
    keys = list(by_cell)
    rows = list(dict.fromkeys(r for (_, r), _ in keys))
    columns = list(dict.fromkeys(c for _, (_, c) in keys))
    (row_name, _), (column_name, _) = keys[0]
    return {"rows": row_name, "columns": column_name, "row_values": rows,
            "column_values": columns,
            "cells": {r: {c: group(by_cell[((row_name, r), (column_name, c))])
                          for c in columns if ((row_name, r), (column_name, c)) in by_cell}
                      for r in rows}}


def grid_table(results: dict[str, Any], condition: str) -> str:
    """A grid's scores for ``condition`` as a text table: a row per row value, a column per
    column value."""
    grid = results["grid"]
    head = f"{grid['rows'] + ' / ' + grid['columns']:<18}" + "".join(
        f"{c:>8}" for c in grid["column_values"])
    lines = [f"{condition}: score by {grid['rows']} and {grid['columns']}", head]
    for r in grid["row_values"]:
        cells = grid["cells"].get(r, {})
        lines.append(f"{r:<18}" + "".join(
            f"{cells[c][condition]['score']:8.1f}" if c in cells and
            cells[c][condition]["score"] is not None else f"{'-':>8}"
            for c in grid["column_values"]))
    return "\n".join(lines)


def grid_heat_maps(results: dict[str, Any], out: Path) -> list[Path]:
    """A heat map of each condition's grid scores (``grid-<condition>.png``); none without
    matplotlib (the ``[stats]`` extra), which the caller says."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []

    grid = results["grid"]
    written = []
    for condition in results["conditions"]:
        values = [[(grid["cells"].get(r, {}).get(c) or {}).get(condition, {}).get("score")
                   for c in grid["column_values"]] for r in grid["row_values"]]
        data = [[float("nan") if v is None else v for v in line] for line in values]
        figure, axes = plt.subplots(figsize=(1.0 + 0.6 * len(grid["column_values"]),
                                             1.2 + 0.5 * len(grid["row_values"])))
        shown = axes.imshow(data, vmin=0, vmax=100, cmap="RdYlGn", aspect="auto")
        axes.set_xticks(range(len(grid["column_values"])), grid["column_values"])
        axes.set_yticks(range(len(grid["row_values"])), grid["row_values"])
        axes.set_xlabel(grid["columns"])
        axes.set_ylabel(grid["rows"])
        axes.set_title(f"{results['model']}: {condition}")
        for i, line in enumerate(values):
            for j, v in enumerate(line):
                if v is not None:
                    axes.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7)
        figure.colorbar(shown, ax=axes, label="score (%)")
        figure.tight_layout()
        path = out / f"grid-{condition}.png"
        write_figure(figure, path, metadata={"Software": None})
        plt.close(figure)
        written.append(path)
    return written


def table(results: dict[str, Any]) -> str:
    """The figures as an aligned text table."""
    conditions = results["conditions"]

    def cell(value, width=8):
        if isinstance(value, (int, float)):
            return f"{value:{width}.1f}"
        return f"{'-':>{width}}"

    names = ["all", *(f"subset {k}" for k in results["subsets"]),
             *(f"{k} page(s)" for k in results["pages"])]
    width = max(24, *map(len, names)) + 1  # subset names whole, never cut
    head = f"{'group':<{width}}" + "".join(f"{c:>12}" for c in conditions) + f"{'n':>6}"
    paired = "image" in conditions and "text" in conditions
    if paired:
        head += f"{'delta':>8}  {'95% CI':>16}{'McNemar p':>11}"
    lines = [f"{results['model']} on {results['run']}", head]

    def line(name: str, group: dict[str, Any]) -> str:
        text = f"{name:<{width}}" + "".join(cell(group[c]["score"], 12) for c in conditions)
        text += f"{group[conditions[0]]['n']:>6}"
        if paired:
            ci = group.get("delta_ci95")
            text += cell(group.get("delta"), 8) + (
                f"  [{ci[0]:6.1f}, {ci[1]:6.1f}]" if ci else f"{'-':>18}")
            p = group.get("mcnemar_p")
            text += f"{p:>11.4f}" if p is not None else f"{'-':>11}"
        return text

    lines.append(line("all", results["overall"]))
    lines += [line(f"subset {k}", v) for k, v in results["subsets"].items()]
    lines += [line(f"{k} page(s)", v) for k, v in results["pages"].items()]
    unparsed = ", ".join(f"{c} {results['overall'][c]['unparsed_share'] or 0:.1f} %"
                         for c in conditions)
    errors = sum(results["overall"][c]["errors"] for c in conditions)
    if "grid" in results:
        lines += ["", *(grid_table(results, c) for c in conditions), ""]
    lines.append(f"unparsed answers (scored 0): {unparsed}; {errors} request(s) failed")
    overall = results["overall"]
    if "image" in conditions and "blank" in conditions and overall.get("blank_delta") is not None:
        low, high = overall["blank_delta_ci95"]
        lines.append(f"reading: image minus blank pages {overall['blank_delta']:.1f} points, 95 % "
                     f"CI [{low:.1f}, {high:.1f}] (blank: what the model scores without reading)")
    page = overall.get("transcribe", {}).get("per_page")
    if page:
        read = (f"{page['n']} page(s), precision {page['score']:.1f} %"
                if page["score"] is not None else f"{page['n']} page(s)")
        lines.append(f"transcription per page: {read}" + (
            f"; {page['whole']} item(s) of several pages read at once (no text recorded per "
            "page)" if page["whole"] else ""))
    order = results.get("option_order")
    if order and order.get("moved"):
        said = "; ".join(f"{c} {v['content']:.1f} % its content, {v['letter']:.1f} % its old "
                         f"letter" for c, v in order.items()
                         if isinstance(v, dict) and v.get("n"))
        lines.append(f"option order: of {order['moved']} item(s) whose gold option the shuffle "
                     f"moved, the choice followed {said}")
    unscored = (results.get("unscored") or {}).get("n")
    if unscored:
        lines.append(f"{unscored} item(s) unscored: no gold answer to score against (not "
                     "sent, not in n or the score; see results.json)")
    return "\n".join(lines)
