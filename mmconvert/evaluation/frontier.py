"""``mmconvert frontier``: which page style reads best for how few vision tokens.

A seeded set of styles (random draws from a style file, or a grid over style fields) is rendered
on a dev sample of a corpus; each point is costed (its compression: the text tokens its images
hold over the vision tokens they cost a model, as ``mmconvert stats`` counts them) and scored
(a model through ``mmconvert eval``, or without one Tesseract's character accuracy on the
images as they are); the points no other point beats on both are the Pareto front. Written:
``frontier.json``, ``frontier.png`` and each point's style file (``styles/<point>.yaml``), which
``render --style`` takes as it is.

Every step resumes: a point's render skips its finished items, its evaluation answers from the
response cache (``OUT/cache``) and its OCR reading is kept beside the manifest it read.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from ..converter import convert
from ..counting import figures_of, item_tokens
from ..errors import UsageError, did_you_mean
from ..executors import local_executor
from ..locks import locked
from ..manifest import atomic_write, write_json
from ..options import cli
from ..plots import pyplot, save_plot
from ..postprocess.sweep import parse_vary
from ..qa.checks import expected_text, ocr_images
from ..qa.ocr import errors, ocr, ocr_languages, readable, tesseract_path
from ..recipes import load_recipe, options_section
from ..recipes.resolve import Resolved, resolve_config
from ..renderers import renderer_class, row_renderer
from ..renderers.page_options import PageOptions
from ..renderers.style_files import load_style, plain_value
from ..rows import Row
from ..runfolder import LOCK, open_run, read_run_file
from ..tokens import load_tokenizer
from ..vision_tokens import rules_for, token_rule
from .paired import bootstrap_mean
from .results import (
    PRECISION,
    READ_NOTE,
    headline,
    modality_refused,
    unparsed_shares,
    unparsed_warnings,
    worst_unparsed,
)
from .run import EvalOptions, Modality, evaluate
from .sweeps import image_interval

FRONTIER = "frontier.json"


class FrontierOptions(EvalOptions):
    """What ``mmconvert frontier`` renders, how it scores and what it counts. The evaluation's
    options are ``mmconvert eval``'s; the model is optional (without it, OCR scores)."""

    model: str | None = Field(  # type: ignore[assignment]  # optional here: OCR scores
        None, description="model name the endpoint serves; without it, each point is scored "
                          "by Tesseract's character accuracy on its images")
    modality: list[Modality] = Field(
        default_factory=lambda: list[Modality](["image", "text-budget"]), min_length=1,
        description="conditions, comma-separated: image; text-budget, each point's items as "
                    "text cut to their pages' vision tokens (its text_baseline); text, the "
                    "whole text twin's score as a reference line",
        json_schema_extra=cli(split=True))
    limit: int | None = Field(50, ge=1, description="items in the dev sample (after --sample)")
    tokenizer: str = Field(
        description="the tokenizer text tokens are counted with (a tokenizer.json, a folder "
                    "holding one, a hub id in the local cache, or tiktoken:NAME); required")
    ratio_model: str = Field(
        description="the model whose vision tokens the compression is counted in (a stats "
                    "rule: qwen2.5-vl, glm-4.1v, gpt-4o, ...); required")
    ratio_models: list[str] | None = Field(None, json_schema_extra=cli(off=True))
    source: Path | None = Field(None, description="local copy of the corpus (as render's)")
    sample: int | None = Field(None, ge=1, description="seeded sample of N items per subset, "
                                                       "before --limit")
    seed: int = Field(0, description="seed of the sample, the style draws and the bootstrap")
    style: str | None = Field(
        None, description="the style file or preset the points are drawn from; a --grid's "
                          "base (default: --recipe's style, else wild)")
    recipe: str | None = Field(
        None, json_schema_extra=cli(metavar="NAME|FILE"),
        description="a recipe every point is rendered with (its renderer options, scope, "
                    "target and transforms; its style is --style's default); a point's "
                    "style fields go over the recipe's options")
    points: int = Field(12, ge=1, le=1000, description="styles drawn at random from --style "
                                                       "(without --grid)")
    grid: list[str] | None = Field(
        None, json_schema_extra=cli(metavar="FIELD:V1,V2"),
        description="a style field and its values; repeatable: the points are every "
                    "combination, over --style's values (its ranges drawn once)")
    workers: int = Field(1, ge=1, le=512, description="render and OCR workers")

    @field_validator("recipe")
    @classmethod
    def _recipe(cls, name: str | None) -> str | None:
        if name is None:
            return name
        renderer = renderer_class(load_recipe(name).renderer, "--recipe")
        if "style" not in renderer.config_model.model_fields:
            raise ValueError(f"{name} is drawn by the {renderer.name} renderer, which takes no "
                             "style; the frontier's points are styles (the page and document "
                             "renderers take them)")
        return name

    @field_validator("ratio_model")
    @classmethod
    def _rule(cls, name: str) -> str:
        token_rule(name)  # an unknown model: one line with a did-you-mean
        return name

    @model_validator(mode="after")
    def _conditions(self) -> FrontierOptions:
        """The conditions asked: a model's, as a curve's (``modality_refused``); without a
        model Tesseract scores each point, and neither --probe nor --modality is taken."""
        if self.model is None:
            asked = [f"--{name}" for name in ("probe", "modality")
                     if name in self.model_fields_set]
            if asked:
                raise ValueError(f"{asked[0]}: conditions a model is asked; without --model, "
                                 "Tesseract's character accuracy scores each point")
            return self
        refused = modality_refused(self.probe, self.modality,
                                   "the frontier scores image and text; ")
        if refused:
            raise ValueError(refused)
        return self


@dataclass
class Point:
    """One style of the frontier and what it measured."""

    name: str
    values: dict[str, Any]  # the style's fields, as its file gives them
    label: str  # what sets it apart: the grid's values, or "drawn"
    figures: dict[str, Any] = field(default_factory=dict)


# --- the points ------------------------------------------------------------------------------

def style_points(options: FrontierOptions) -> list[Point]:
    """The frontier's styles: ``--grid``'s combinations over ``--style`` (its ranges drawn
    once), or ``--points`` draws from it; the same values twice are one point."""
    check_grid_fields(options.grid)
    style, fixed = load_style(base_style(options))
    if options.grid:
        base = {**fixed, **style.draw(options.seed, "frontier-base")}
        axes = [parse_vary(text, "--grid") for text in options.grid]
        names = [name for name, _ in axes]
        if len(set(names)) < len(names):
            raise UsageError(f"--grid: {names}: a field given twice")
        drawn = [({**base, **dict(zip(names, combo, strict=True))},
                  ", ".join(f"{n}={v:g}" if isinstance(v, float) else f"{n}={v}"
                            for n, v in zip(names, combo, strict=True)))
                 for combo in itertools.product(*(values for _, values in axes))]
    else:
        drawn = [({**fixed, **style.draw(options.seed, f"frontier-{k}")}, "drawn")
                 for k in range(options.points)]
    points: list[Any] = []
    seen: set[Any] = set()
    for values, label in drawn:
        where = f"--grid {label}" if options.grid else f"--style {base_style(options)}"
        values = {name: plain_value(where, name, value) for name, value in sorted(values.items())}
        key = json.dumps(values, sort_keys=True)
        if key not in seen:
            seen.add(key)
            points.append(Point(f"p{len(points) + 1:02d}", values, label))
    return points


def base_style(options: FrontierOptions) -> str:
    """The style the points come from: --style, else the recipe's, else wild."""
    if options.style is not None:
        return options.style
    if options.recipe is not None:
        recipe = load_recipe(options.recipe)
        if isinstance(recipe.style, dict):
            raise UsageError(f"--recipe {options.recipe}: its style is written in the recipe, "
                             "not a style file: give --style")
        if recipe.style is not None:
            return recipe.style
    return "wild"


def point_config(corpus: str, style: Path, point: Point, options: FrontierOptions
                 ) -> Resolved:
    """The render config of a point: the recipe's (when one is given) with the point's style,
    whose fields go over the recipe's options, and the dev sample's selection."""
    drop: tuple[str, ...] = ()
    if options.recipe is not None:  # the recipe's options the point's style sets go

        section = options_section(renderer_class(load_recipe(options.recipe).renderer,
                                                 "--recipe"))
        drop = tuple(f"{section}.{name}" for name in point.values)
    selection = {"source": options.source, "subsets": options.subsets,
                 "sample": options.sample, "limit": options.limit, "seed": options.seed}
    return resolve_config(
        [("frontier", {"corpus": corpus, "style": str(style),
                       **{k: v for k, v in selection.items() if v is not None}})],
        recipe=options.recipe, corpus=corpus, drop=drop, checked=False)


def write_style(path: Path, point: Point, options: FrontierOptions) -> None:
    """The point's style file; one left by another frontier (other values) is refused."""
    import yaml

    text = (f"# mmconvert frontier point {point.name} ({point.label}), from --style "
            f"{base_style(options)}, seed {options.seed}\n"
            + yaml.safe_dump(point.values, sort_keys=True, allow_unicode=True))
    if path.is_file() and path.read_text(encoding="utf-8") != text:
        raise UsageError(f"{path}: another frontier's point (its style differs); use another "
                         "--out")
    if not path.is_file():
        atomic_write(path, text.encode("utf-8"))


# --- measuring a point -----------------------------------------------------------------------

def point_compression(rows: list[Row], tokenizer, model: str) -> dict[str, Any]:
    """The point's compression for ``model``: its items' text tokens over their vision tokens
    (``counting.item_tokens``, as ``mmconvert stats`` counts them), pooled (the sample's
    totals) and per item (the median)."""
    rules = rules_for([model])
    items = [item_tokens(row, rules, tokenizer) for row in rows]
    counted = [i for i in items if i["tokens"][model]]
    text = sum(i["text_tokens"] for i in counted)
    vision = sum(i["tokens"][model] for i in counted)
    return {"compression": round(text / vision, 4) if vision else None,
            "compression_median": figures_of([i["ratio"][model] for i in items]).get("median"),
            "text_tokens": text, "vision_tokens": vision, "items": len(rows)}


def ocr_accuracy(run: Path, rows: list[Row], folder: Path, workers: int,
                 seed: int) -> dict[str, Any]:
    """Tesseract's character accuracy on the point's images as they are (no enlarging: a
    small page reads worse, which is the point), per item 1 - CER of its readable
    characters, floored at 0; kept in ``folder/ocr.json`` beside the manifest's hash, so a
    resumed frontier reads each point once. Tesseract runs as a process of its own, so
    ``workers`` threads wait on as many."""
    manifest = hashlib.sha256((run / "manifest.jsonl").read_bytes()).hexdigest()
    kept = folder / "ocr.json"
    if kept.is_file():
        record = json.loads(kept.read_text(encoding="utf-8"))
        if record.get("manifest_sha256") == manifest:
            return summary_of(record["items"], seed)
    items = list(local_executor(1, len(rows), threads=workers).map(
        functools.partial(ocr_reader, run), rows))
    write_json(kept, {"manifest_sha256": manifest, "items": items}, indent=1)
    return summary_of(items, seed)


def ocr_reader(run: Path):
    """The OCR worker: an item's row -> its character accuracy."""
    return functools.partial(read_item, run)


def read_item(run: Path, row: Row) -> dict[str, Any]:
    """One item's character accuracy: its images read in the item's script(s) at their own
    size, against the text they should show; None when that text has nothing to read."""
    language = row.language or "en"
    reference = readable(expected_text(row), language)
    if not reference:
        return {"id": row.id, "accuracy": None, "reason": "no text to read"}
    langs = ocr_languages(language, row_renderer(row).ocr_text(row))
    read_back = " ".join(ocr(read_run_file(run, image["path"]), langs).text
                         for image in ocr_images(row))
    wrong = errors(reference, readable(read_back, language))
    return {"id": row.id, "accuracy": round(max(0.0, 1 - wrong / len(reference)), 6)}


def summary_of(items: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """The mean character accuracy (percent) of the items read, with its 95 % interval."""
    values = [i["accuracy"] for i in items if i["accuracy"] is not None]
    interval = bootstrap_mean(values, seed) if values else None
    return {"accuracy": round(100 * sum(values) / len(values), 4) if values else None,
            "accuracy_ci95": [round(100 * b, 4) for b in interval] if interval else None,
            "n": len(values), "unscored": len(items) - len(values)}


def eval_options(options: BaseModel, **fixed: Any) -> EvalOptions:
    """``eval``'s options for a command that evaluates its own runs (a curve's points, a
    frontier's): each field of ``options`` that ``EvalOptions`` has, but the selection's
    (``limit``, ``subsets``: the runs are already drawn), with the ``fixed`` fields set."""
    values = {name: getattr(options, name) for name in EvalOptions.model_fields
              if name not in ("limit", "subsets", *fixed)}
    return EvalOptions.model_validate({**values, **fixed})


def model_accuracy(run: Path, folder: Path, options: FrontierOptions, cache: Path,
                   display: str) -> dict[str, Any]:
    """The point's score through ``mmconvert eval`` (the image condition, and the text
    twin's when asked), with the image score's 95 % interval."""
    results = evaluate(run, folder, eval_options(options, ratio_models=[options.ratio_model]),
                       display=display, cache=cache)
    return point_score(results, folder, options.seed, options.probe)


def point_score(results: dict[str, Any], folder: Path, seed: int,
                probe: str | None) -> dict[str, Any]:
    """A curve's or frontier's point's figures from its evaluation (``results``, written
    into ``folder``): the headline condition's score (``headline``; None when the
    evaluation has none), its 95 % interval and n, the items left unscored, the unparsed
    shares, and the text conditions' scores where they were asked."""
    overall = results["overall"]
    shown, _ = headline(probe)
    figure = overall.get(shown, {})
    return {"accuracy": figure.get("score"),
            "accuracy_ci95": image_interval(folder / "responses.jsonl", seed, shown),
            "n": figure.get("n", 0), "unscored": results["unscored"]["n"],
            "unparsed_share": unparsed_shares(results),
            **({"text": overall["text"]["score"]} if "text" in overall else {}),
            **({"text_baseline": overall["text-budget"]["score"],
                "text_baseline_delta": overall.get("budget_delta"),
                "text_baseline_tokens": results["text_budget"]["kept_tokens"].get("mean")}
               if "text-budget" in overall else {})}


# --- the front -------------------------------------------------------------------------------

def pareto(points: list[Point]) -> list[Point]:
    """The points no other point matches or beats on both accuracy and compression (and
    beats on one), by compression; points without both figures are on no front."""
    scored = [p for p in points if p.figures.get("accuracy") is not None
              and p.figures.get("compression") is not None]

    def beats(q: Point, p: Point) -> bool:
        a, b = q.figures, p.figures
        return (a["accuracy"] >= b["accuracy"] and a["compression"] >= b["compression"]
                and (a["accuracy"] > b["accuracy"] or a["compression"] > b["compression"]))

    front = [p for p in scored if not any(beats(q, p) for q in scored)]
    return sorted(front, key=lambda p: (p.figures["compression"], p.name))


def frontier(corpus: str, out: Path, options: FrontierOptions, *, display: str = "none",
             echo=print) -> dict[str, Any]:
    """Render, cost and score every point into ``out``; write and return frontier.json."""
    tokenizer = load_tokenizer(options.tokenizer)  # a missing one stops before any render
    if options.model is None:
        tesseract_path()  # no model and no Tesseract: one line before any render
    if options.recipe is not None:  # its fingerprint's note, once
        resolve_config([], recipe=options.recipe, warn=echo)
    # what a point's figure is: Tesseract's character accuracy with no model, a model's
    # score, or with --probe transcribe its pages' transcription precision
    measure = "accuracy" if options.model is None else headline(options.probe)[1]
    points = style_points(options)
    with locked(out / LOCK, out):
        for point in points:
            write_style(out / "styles" / f"{point.name}.yaml", point, options)
        for number, point in enumerate(points, start=1):
            run = out / "points" / point.name
            config = point_config(corpus, out / "styles" / f"{point.name}.yaml", point,
                                  options)
            summary = convert(config.values, resolved=config, out=run,
                              workers=options.workers, log=lambda m: None)
            rows = open_run(run).rows()
            point.figures = point_compression(rows, tokenizer, options.ratio_model)
            evals = out / "evals" / point.name
            point.figures.update(
                ocr_accuracy(run, rows, evals, options.workers, options.seed)
                if options.model is None else
                model_accuracy(run, evals, options, out / "cache", display))
            accuracy = point.figures["accuracy"]
            echo(f"[{number}/{len(points)}] {point.name} ({point.label}): "
                 f"{summary.rendered} item(s) rendered, {summary.already_done} already done; "
                 f"compression {point.figures['compression']}, {measure} "
                 + (f"{accuracy:.1f} %" if accuracy is not None else "- (nothing scored)"))
            for line in unparsed_warnings(point.name, point.figures.get("unparsed_share")):
                echo(line)
        front = pareto(points)
        on_front = {p.name for p in front}
        result = {
            "corpus": corpus, "scorer": options.model or "ocr:tesseract", "measure": measure,
            "ratio_model": options.ratio_model, "tokenizer": tokenizer.record(),
            "style": base_style(options), "recipe": options.recipe, "seed": options.seed,
            "grid": options.grid,
            "points": [{"name": p.name, "label": p.label,
                        "style_file": str(Path("styles") / f"{p.name}.yaml"),
                        "run": str(Path("points") / p.name), "on_front": p.name in on_front,
                        **p.figures, "style": p.values} for p in points],
            "front": [p.name for p in front]}
        drawn = plot(result, out) if points else None
        result["plot"] = drawn.name if drawn else None
        write_json(out / FRONTIER, result, indent=1)
    return result


def plot(result: dict[str, Any], out: Path) -> Path | None:
    """Accuracy against compression, the front drawn as a step line; None without
    matplotlib."""

    plt = pyplot()
    if plt is None:
        return None

    points = [p for p in result["points"]
              if p["accuracy"] is not None and p["compression"] is not None]
    figure, ax = plt.subplots(figsize=(7, 5))
    for on_front, colour in ((False, "#9aa5b1"), (True, "#c44e52")):
        chosen = [p for p in points if p["on_front"] == on_front]
        ax.scatter([p["compression"] for p in chosen], [p["accuracy"] for p in chosen],
                   color=colour, s=28, zorder=3,
                   label="Pareto front" if on_front else "other styles")
    front = sorted((p for p in points if p["on_front"]), key=lambda p: p["compression"])
    if front:
        ax.step([p["compression"] for p in front], [p["accuracy"] for p in front],
                where="pre", color="#c44e52", linewidth=1)  # the boxes' upper edge
    for p in points:
        ax.annotate(p["name"], (p["compression"], p["accuracy"]), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    baselines = [p for p in points if p.get("text_baseline") is not None]
    if baselines:  # each point's text cut to its own vision tokens, at its compression
        ax.scatter([p["compression"] for p in baselines],
                   [p["text_baseline"] for p in baselines], marker="x", color="#4c72b0",
                   s=28, zorder=3, label="text at the same budget")
    texts = {p.get("text") for p in result["points"]} - {None}
    if len(texts) == 1:
        ax.axhline(texts.pop(), color="grey", linestyle="--", label="text twin")
    ax.set_xlabel(f"compression (text tokens / {result['ratio_model']} vision tokens)")
    ax.set_ylabel("character accuracy (%)" if result["scorer"] == "ocr:tesseract"
                  else f"{result['scorer']} transcription precision (%)"
                  if result.get("measure") == PRECISION else f"{result['scorer']} score (%)")
    ax.set_ylim(0, 105)
    ax.legend()
    ax.set_title(f"{result['corpus']}: {result.get('measure', 'accuracy')} against compression")
    return save_plot(figure, out / "frontier.png")



def table(result: dict[str, Any]) -> str:
    """The points as a table, the front marked."""
    width = max([len("point"), *(len(p["name"]) for p in result["points"])]) + 2
    baseline = any("text_baseline" in p for p in result["points"])
    replies = any("unparsed_share" in p for p in result["points"])  # a model's, not OCR's
    lines = [line for p in result["points"]
             for line in unparsed_warnings(p["name"], p.get("unparsed_share"))]
    head = "read" if result.get("measure") == PRECISION else "accuracy"
    lines += [f"{'point':<{width}}{'compression':>12}{head:>10}"
              + (f"{'text@budget':>12}" if baseline else "")
              + (f"{'unparsed':>9}" if replies else "") + f"{'n':>5}  front  style"]
    for p in result["points"]:
        accuracy = f"{p['accuracy']:10.1f}" if p["accuracy"] is not None else f"{'-':>10}"
        compression = (f"{p['compression']:12.3f}" if p["compression"] is not None
                       else f"{'-':>12}")
        text = p.get("text_baseline")
        at_budget = (f"{text:12.1f}" if text is not None else f"{'-':>12}") if baseline else ""
        worst = worst_unparsed(p.get("unparsed_share"))
        unparsed = (f"{worst:9.1f}" if worst is not None else f"{'-':>9}") if replies else ""
        lines.append(f"{p['name']:<{width}}{compression}{accuracy}{at_budget}{unparsed}"
                     f"{p['n']:>5}  "
                     f"{'  *  ' if p['on_front'] else '     '}  {p['label']}")
    if head == "read":
        lines.append(READ_NOTE)
    lines.append(f"front: {', '.join(result['front']) or 'none'}; style files in styles/"
                 + (f"; plot: {result['plot']}" if result["plot"] else ""))
    return "\n".join(lines)


def check_grid_fields(grid: list[str] | None) -> None:
    """A grid field that is no page style field: one line with a did-you-mean."""
    for text in grid or []:
        name, _ = parse_vary(text, "--grid")
        if name not in PageOptions.model_fields or name == "render":
            raise UsageError(f"--grid {text}: {name!r} is not a page style field"
                             f"{did_you_mean(name, PageOptions.model_fields)}")
