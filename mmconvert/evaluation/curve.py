"""``mmconvert curve``: a model's compression curve, accuracy against vision tokens, from one
command.

Each point renders the same dev sample drawn to a target for the model's vision-token rule
(``--budgets``: a vision budget per point, or ``--ratios``: a compression ratio per point, as
VTCBench's fixed-ratio mode tunes a size per model), over a recipe or a style (any renderer
that draws to a target: the page renderer or documents), and scores it through ``mmconvert
eval``: the images, the text cut to each item's own vision tokens (``text-budget``, the
baseline at the same budget) and, once, the whole text (the reference line). VTCBench's
fixed-render mode is a recipe with no target: ``--budgets`` left out, one point, the recipe's
pages, counted with the model's rule.

Written: ``curve.json`` (each point's target, its items' vision tokens, ratio and how many met
the target exactly, the image score with its interval, the text baseline's, and the rule with
its source and the date it was checked, so two labs' curves can be compared), ``curve.png``
and a table. Every step resumes: a point's render skips finished items, its evaluation answers
from the shared response cache (``OUT/cache``).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import closing
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from ..converter import convert
from ..executors.local import ProcessExecutor
from ..locks import locked
from ..manifest import write_json
from ..options import cli
from ..plots import pyplot, save_plot
from ..recipes.resolve import Resolved, resolve_config
from ..rows import Row
from ..runfolder import LOCK, open_run
from ..tokens import load_tokenizer
from ..vision_tokens import EXTRA_SOURCES, RULE_ALIASES, RULE_SOURCES, token_rule
from .frontier import eval_options, point_compression, point_score
from .results import (
    PRECISION,
    READ_NOTE,
    headline,
    modality_refused,
    unparsed_warnings,
    worst_unparsed,
)
from .run import EvalOptions, Modality, answering_key, evaluate

CURVE = "curve.json"


class CurveOptions(EvalOptions):
    """What ``mmconvert curve`` renders and asks. The evaluation's options are ``eval``'s."""

    modality: list[Modality] = Field(
        default_factory=lambda: list[Modality](["image", "text-budget", "text"]), min_length=1,
        description="conditions, comma-separated: image; text-budget, the text cut to each "
                    "item's vision tokens; text, the whole text's reference line",
        json_schema_extra=cli(split=True))
    tokenizer: str = Field(  # required here
        description="the tokenizer text tokens are counted and cut with (a tokenizer.json, a "
                    "folder holding one, a hub id in the local cache, or tiktoken:NAME)")
    ratio_model: str = Field(
        description="the vision-token rule the targets are met for and counted in (mmconvert "
                    "stats names them): one for every --model, or one per model, "
                    "comma-separated in --model's order")
    ratio_models: list[str] | None = Field(None, json_schema_extra=cli(off=True))
    budgets: list[int] | None = Field(
        None, json_schema_extra=cli(split=True, metavar="N1,N2"),
        description="vision budgets, one point each (DeepSeek-OCR's: 64,100,256,400)")
    ratios: list[float] | None = Field(
        None, json_schema_extra=cli(split=True, metavar="R1,R2"),
        description="compression ratios (text tokens over vision tokens), one point each")
    recipe: str | None = Field(
        None, json_schema_extra=cli(metavar="NAME|FILE"),
        description="the recipe every point renders with (its renderer, scope, style, PPI); "
                    "its own target gives way to the point's")
    style: str | None = Field(None, description="a style preset or file, without --recipe")
    move_width: bool = Field(
        True, description="meet each target by the page width too, in the rule's steps; "
                          "--no-move-width moves the font size alone (VTCBench's fixed ratio)")
    source: Path | None = Field(None, description="local copy of the corpus (as render's)")
    sample: int | None = Field(None, ge=1, description="seeded sample of N items per subset")
    limit: int | None = Field(50, ge=1, description="items in the dev sample")
    workers: int = Field(1, ge=1, le=512, description="render workers")

    @model_validator(mode="after")
    def _points(self) -> CurveOptions:
        for rule in self.rules:
            token_rule(rule)  # an unknown model: one line with a did-you-mean
        if len(self.rules) not in (1, len(self.models)):
            raise ValueError(f"--ratio-model: {len(self.rules)} rules for {len(self.models)} "
                             "models; give one for all or one per model")
        if self.budgets and self.ratios:
            raise ValueError("give --budgets or --ratios, not both")
        if any(b < 1 for b in self.budgets or []) or any(r <= 0 for r in self.ratios or []):
            raise ValueError("budgets are whole vision tokens over 0, ratios over 0")
        if self.recipe and self.style:
            raise ValueError("give --recipe or --style, not both")
        refused = modality_refused(self.probe, self.modality)
        if refused:
            raise ValueError(refused)
        return self


    @property
    def models(self) -> list[str]:
        """The models --model names, comma-separated: a curve each."""
        return [m.strip() for m in self.model.split(",") if m.strip()]

    @property
    def rules(self) -> list[str]:
        return [r.strip() for r in self.ratio_model.split(",") if r.strip()]

    def pairs(self) -> list[tuple[str, str]]:
        """Each model with its rule."""
        rules = self.rules * len(self.models) if len(self.rules) == 1 else self.rules
        return list(zip(self.models, rules, strict=True))


def safe(name: str) -> str:
    """A model's or rule's name as a folder name: itself when it is one, else its other
    characters as '_' and 8 hex digits of its sha256, so that two names never share a folder
    (``org/m`` and ``org_m``)."""
    import hashlib

    plain = "".join(c if c.isalnum() or c in ".-_" else "_" for c in name).lstrip(".")
    if plain == name and plain:
        return plain
    return f"{plain}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def points_of(options: CurveOptions) -> list[tuple[str, dict[str, Any] | None]]:
    """Each point's label and target (None: the recipe's own pages, fixed render)."""
    if options.budgets:
        return [(f"budget-{b}", {"vision_budget": b}) for b in sorted(set(options.budgets))]
    if options.ratios:
        return [(f"ratio-{r:g}", {"target_ratio": r, "tokenizer": options.tokenizer})
                for r in sorted(set(options.ratios), reverse=True)]
    return [("fixed", None)]


def point_config(corpus: str, options: CurveOptions, target: dict[str, Any] | None,
                 rule: str) -> Resolved:
    """A point's render config: the recipe's (its own target taken out: the point's, or
    none), or --style, with the point's target and the curve's selection over it."""
    chosen: dict[str, Any] = {"corpus": corpus,
                              **({"style": options.style} if options.style else {})}
    if target is not None:
        chosen["target"] = {**target, "ratio_model": rule, "move_width": options.move_width}
    selection = {"source": options.source, "subsets": options.subsets,
                 "sample": options.sample, "limit": options.limit, "seed": options.seed}
    chosen.update({k: v for k, v in selection.items() if v is not None})
    return resolve_config([("curve", chosen)], recipe=options.recipe, corpus=corpus,
                          drop=("target",), checked=False)


def measured(rows: list[Row], tokenizer, model: str) -> dict[str, Any]:
    """The point's pages for ``model``: mean vision tokens, the pooled ratio, and how many
    items met the target exactly and within 5 %."""
    figures = point_compression(rows, tokenizer, model)
    targets = [t for t in (getattr(row, "target", None) for row in rows) if t]
    return {"vision_tokens": round(figures["vision_tokens"] / len(rows), 2) if rows else None,
            "ratio": figures["compression"], "items": len(rows),
            **({"exact": sum(bool(t.get("exact")) for t in targets),
                "within": sum(bool(t.get("within")) for t in targets)} if targets else {})}


def curve(corpus: str, out: Path, options: CurveOptions, *, display: str = "none",
          echo=print) -> dict[str, Any]:
    """Render and score every model's points into ``out``; write and return curve.json: a
    curve per model (``curves``), each with its rule named."""
    tokenizer = load_tokenizer(options.tokenizer)  # a missing one stops before any render
    for model, rule in options.pairs():  # and an endpoint that will not answer
        answering_key(evaluation_options(options, model, rule))  # eval's own check
    if options.recipe is not None:  # its fingerprint's note, once
        resolve_config([], recipe=options.recipe, warn=echo)
    with locked(out / LOCK, out):
        curves = [model_curve(corpus, out, options, model, rule, tokenizer, display, echo)
                  for model, rule in options.pairs()]
        result = {"corpus": corpus, "base_url": options.base_url,
                  "tokenizer": tokenizer.record(), "recipe": options.recipe,
                  "style": options.style, "budget_cut": options.budget_cut,
                  "seed": options.seed, "curves": curves}
        drawn = plot(result, out)
        result["plot"] = drawn.name if drawn else None
        write_json(out / CURVE, result, indent=1)
    return result


def model_curve(corpus: str, out: Path, options: CurveOptions, model: str, rule: str,
                tokenizer, display: str, echo) -> dict[str, Any]:
    """One model's points: the renders for its rule (shared by the models of one rule), its
    evaluations (``OUT/evals/<model>/<point>``), the response cache shared by all."""
    source, checked = {**RULE_SOURCES, **EXTRA_SOURCES}.get(RULE_ALIASES.get(rule, rule),
                                                           ("", None))
    evaluation = evaluation_options(options, model, rule)
    labels = points_of(options)
    points = []
    runs = [out / "points" / f"{safe(rule)}-{label}" for label, _ in labels]
    drawn = draw_ahead([(corpus, options, target, rule, run)
                        for (_, target), run in zip(labels, runs, strict=True)])
    with closing(drawn):  # an error below ends the render drawn ahead, not waits for it
        for number, ((label, target), run) in enumerate(zip(labels, runs, strict=True),
                                                        start=1):
            rendered, already_done = next(drawn)
            rows = open_run(run).rows()
            folder = out / "evals" / safe(model) / label
            point: dict[str, Any] = {"name": label, "target": target,
                                     "run": str(run.relative_to(out)),
                                     **measured(rows, tokenizer, rule)}
            results = evaluate(run, folder, evaluation, display=display, cache=out / "cache")
            point.update(point_score(results, folder, options.seed, options.probe))
            points.append(point)
            echo(f"{model} [{number}/{len(labels)}] {label}: {rendered} item(s) rendered, "
                 f"{already_done} already done; {point['vision_tokens']} vision tokens an "
                 f"item, image {_pct(point['accuracy'])}, text at the budget "
                 f"{_pct(point.get('text_baseline'))}, unparsed "
                 f"{_pct(worst_unparsed(point['unparsed_share']))}")
            for line in unparsed_warnings(f"{model} {label}", point["unparsed_share"]):
                echo(line)
    texts = {p.get("text") for p in points} - {None}
    return {"model": model, "rule": {"name": rule, "source": source, "checked": checked},
            "measure": headline(options.probe)[1],
            "text": texts.pop() if len(texts) == 1 else None, "points": points}


def evaluation_options(options: CurveOptions, model: str, rule: str) -> EvalOptions:
    """``eval``'s options for one model's points."""
    return eval_options(options, model=model, ratio_models=[rule])


def draw_ahead(points: list[tuple[str, CurveOptions, dict[str, Any] | None, str, Path]]
               ) -> Generator[tuple[int, int], None, None]:
    """Each point's render (``corpus, options, target, rule, run``), in order: its items
    rendered and already done. With two points or more, the renders go on in a process of
    their own while the points before them are evaluated, so a curve takes about its
    rendering, or its requests, whichever is longer, not their sum (bench/curve_speed.py
    --floor). Each render is the one ``render`` would make, into the point's own folder."""
    if len(points) == 1:
        yield draw_point(points[0])
        return
    # a point's evaluation that fails ends the render drawn ahead at once (it resumes)
    yield from ProcessExecutor(1).map(point_drawer, points, end_early=True)


def point_drawer():
    """The render process's worker: one task is ``draw_point``'s."""
    return draw_point


def draw_point(point: tuple[str, CurveOptions, dict[str, Any] | None, str, Path]
               ) -> tuple[int, int]:
    corpus, options, target, rule, run = point
    config = point_config(corpus, options, target, rule)
    summary = convert(config.values, resolved=config, out=run, workers=options.workers,
                      log=lambda m: None)
    return summary.rendered, summary.already_done


def _pct(value: float | None) -> str:
    return f"{value:.1f} %" if value is not None else "-"


def plot(result: dict[str, Any], out: Path) -> Path | None:
    """Accuracy against vision tokens, a colour per model: its images (solid), its text at
    the same budget (dashed) and its whole text's line (dotted); None without matplotlib."""

    plt = pyplot()
    if plt is None:
        return None
    figure, ax = plt.subplots(figsize=(7, 5))
    xs: list[float] = []
    for number, found in enumerate(result["curves"]):
        colour = f"C{number}"
        points = [p for p in found["points"] if p["vision_tokens"] is not None]
        xs += [p["vision_tokens"] for p in points if p["vision_tokens"]]
        rule = found["rule"]
        name = f"{found['model']} ({rule['name']}'s rule, {rule['checked']})"
        image = "pages' transcription precision" if found.get("measure") == PRECISION \
            else "image"
        for key, what, style in (("accuracy", image, "o-"),
                                 ("text_baseline", "text at the same budget", "x--")):
            shown = [p for p in points if p.get(key) is not None]
            if shown:
                ax.plot([p["vision_tokens"] for p in shown], [p[key] for p in shown], style,
                        color=colour, label=f"{name}: {what}")
        if found.get("text") is not None:
            ax.axhline(found["text"], color=colour, linestyle=":", linewidth=1,
                       label=f"{found['model']}: whole text")
    ax.set_xlabel("vision tokens an item, by each model's rule")
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7)
    if xs and max(xs) >= 4 * min(xs):
        ax.set_xscale("log")  # budgets grow by factors (64, 100, 256, 400)
        ax.set_xticks(sorted(set(xs)), [f"{x:g}" for x in sorted(set(xs))])
        ax.minorticks_off()
    measures = {found.get("measure", "accuracy") for found in result["curves"]}
    ax.set_title(f"{Path(result['corpus']).name}: {' and '.join(sorted(measures))} against "
                 "vision tokens")
    return save_plot(figure, out / "curve.png")


def table(result: dict[str, Any]) -> str:
    """The points as a table per model, with its rule named."""
    lines: list[str] = []
    for found in result["curves"]:
        for p in found["points"]:
            lines += unparsed_warnings(f"{found['model']} {p['name']}", p.get("unparsed_share"))
    for found in result["curves"]:
        rule = found["rule"]
        lines += [f"{found['model']} on {result['corpus']}; vision tokens by {rule['name']}'s "
                  f"rule (checked {rule['checked']})",
                  f"{'point':<14}{'vision tok':>11}{'ratio':>8}{'exact':>7}"
                  f"{'read' if found.get('measure') == PRECISION else 'image':>8}"
                  f"{'text@budget':>12}{'unparsed':>9}{'n':>5}"]
        for p in found["points"]:
            exact = f"{p['exact']}/{p['items']}" if "exact" in p else "-"
            lines.append(f"{p['name']:<14}{_num(p['vision_tokens'], 11)}"
                         f"{_num(p['ratio'], 8, 2)}{exact:>7}{_num(p['accuracy'], 8)}"
                         f"{_num(p.get('text_baseline'), 12)}"
                         f"{_num(worst_unparsed(p.get('unparsed_share')), 9)}{p['n']:>5}")
        if found.get("text") is not None:
            lines.append(f"whole text: {found['text']:.1f}")
        lines.append("")
    if any(found.get("measure") == PRECISION for found in result["curves"]):
        lines.append(READ_NOTE)
    lines.append("unparsed: the largest share of replies (percent) of any condition that "
                 "named no answer the scorer reads, scored 0")
    lines.append(f"curves in {CURVE}" + (f"; plot: {result['plot']}" if result["plot"] else ""))
    return "\n".join(lines)


def _num(value: float | None, width: int, digits: int = 1) -> str:
    return f"{value:{width}.{digits}f}" if value is not None else f"{'-':>{width}}"


__all__ = ["CurveOptions", "curve", "table"]
