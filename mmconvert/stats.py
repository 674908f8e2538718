"""``mmconvert stats``: what a run's images hold and what they cost a model.

Per run: images (pages) per item; words per image with LogicOCR's density buckets; image sizes;
and the vision tokens each item would take under the published rules of a few common
processors (``TOKEN_RULES``). Printed as text or JSON, and drawn as PNG plots with matplotlib.

Words are counted as the QA check counts them (``qa.checks.word_count``: runs of letters or
digits, each CJK character one word), by ``counting``, which eval, frontiers and text budgets
count with too; the plots are written through ``plots``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .counting import figures_of, image_words, item_tokens, item_words, ratio_summary, shown_images
from .manifest import no_links_in
from .plots import pyplot, save_plot
from .qa.checks import BUCKETS, DENSITY, density
from .renderers import renderer_class
from .runfolder import STATS_PLOTS, open_run
from .vision_tokens import EXTRA_SOURCES, RULE_ALIASES, RULE_SOURCES, rules_for

# --- gathering -----------------------------------------------------------------------------

def gather(run: Path, tokenizer=None, models: list[str] | None = None) -> dict[str, Any]:
    """Per-item and per-image figures of the run, and their summaries; with ``tokenizer``
    (``tokens.TextTokenizer``), each item's text tokens and its compression ratio per model
    (the text tokens its images hold over the vision tokens they cost); ``models``: the
    models to count vision tokens for (default: the main rules, ``TOKEN_RULES``)."""
    rules = rules_for(models)
    run = Path(run)
    folder = open_run(run)
    rows, info = folder.rows(), folder.info()
    per_item: list[dict[str, Any]] = []
    per_image: list[dict[str, Any]] = []
    for row in rows:
        shown = shown_images(row)
        words = image_words(run, row)
        figures = item_tokens(row, rules, tokenizer)
        item = {key: figures.pop(key) for key in ("id", "subset", "images")}
        per_item.append({**item, "words": item_words(row, words), **figures})
        for img, count in zip(shown, words, strict=True):
            per_image.append({"id": row.id, "path": img.path, "width": img.width,
                              "height": img.height, "words": count,
                              "density": None if count is None else density(count)})
    buckets = Counter(image["density"] for image in per_image)
    unknown = buckets.pop(None, 0)
    config = info.get("config") or {}
    name = config.get("renderer", rows[0].renderer.name if rows else None)
    return {
        "run": str(run), "renderer": name,
        "unit": (renderer_class(name).unit if name else "image") + "s",
        "items": len(rows), "images": len(per_image),
        "images_per_item": figures_of([i["images"] for i in per_item]),
        "images_per_item_counts": dict(sorted(Counter(i["images"] for i in per_item).items())),
        "words_per_image": figures_of([i["words"] for i in per_image]),
        "density": {name: buckets.get(name, 0) for name in BUCKETS},
        # images of items that record no text per image: their words are not guessed
        **({"words_unknown_images": unknown} if unknown else {}),
        "width": figures_of([i["width"] for i in per_image]),
        "height": figures_of([i["height"] for i in per_image]),
        "megapixels": figures_of([round(i["width"] * i["height"] / 1e6, 3) for i in per_image]),
        "vision_tokens_per_item": {name: figures_of([i["tokens"][name] for i in per_item])
                                   for name in rules},
        "token_rules": {name: " ".join((rule.__doc__ or "").split())
                        + " Source: {}; checked {}.".format(
                            *{**RULE_SOURCES, **EXTRA_SOURCES}[RULE_ALIASES.get(name, name)])
                        for name, rule in rules.items()},
        **(ratio_summary(per_item, tokenizer, list(rules)) if tokenizer is not None else {}),
        "per_item": per_item, "per_image": per_image,
    }


def as_text(stats: dict[str, Any]) -> str:
    def line(name: str, s: dict[str, float]) -> str:
        if not s.get("count"):
            return f"  {name:<22} -"
        return (f"  {name:<22} min {s['min']:g}  median {s['median']:g}  mean {s['mean']:g}  "
                f"max {s['max']:g}")

    unit = stats["unit"]
    out = [f"{stats['run']}: {stats['items']} item(s), {stats['images']} image(s) shown "
           f"({stats['renderer']} renderer)",
           line(f"{unit} per item", stats["images_per_item"]),
           line("words per image", stats["words_per_image"]),
           "  density (words/image)  " + ", ".join(
               f"{name}: {n}" for name, n in stats["density"].items())
           + (f"; words unknown for {stats['words_unknown_images']} image(s) (no text "
              "recorded per image)" if stats.get("words_unknown_images") else ""),
           line("width (px)", stats["width"]), line("height (px)", stats["height"]),
           line("megapixels", stats["megapixels"]),
           "vision tokens per item (estimates; rules below):"]
    out += [line(name, s) for name, s in stats["vision_tokens_per_item"].items()]
    if "ratio" in stats:
        out.append(f"text tokens per item ({stats['tokenizer']['name']}): "
                   + line("", stats["text_tokens_per_item"]).strip())
        out.append("compression per item (text tokens / vision tokens):")
        out += [line(name, s) for name, s in stats["ratio"].items()]
    out.append("rules:")
    out += [f"  {name}: {rule}" for name, rule in stats["token_rules"].items()]
    return "\n".join(out)


def plot(stats: dict[str, Any], folder: Path) -> list[Path]:
    """Four PNG plots of the figures into ``folder`` (ImportError: no matplotlib)."""
    plt = pyplot()
    if plt is None:
        raise ImportError("matplotlib")

    folder.mkdir(parents=True, exist_ok=True)
    no_links_in(folder)
    unit = stats["unit"]
    written = []

    def save(fig, name: str) -> None:
        """The plot ``name``, one of ``STATS_PLOTS`` (so --overwrite knows it is a run's)."""
        if name not in STATS_PLOTS:
            raise ValueError(f"{name}: not in runfolder.STATS_PLOTS")
        written.append(save_plot(fig, folder / f"{name}.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    counts = stats["images_per_item_counts"]
    ax.bar([str(k) for k in counts], list(counts.values()), color="#4c72b0")
    ax.set(xlabel=f"{unit} per item", ylabel="items", title=f"{unit.capitalize()} per item")
    save(fig, "images_per_item")

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    words = [i["words"] for i in stats["per_image"] if i["words"] is not None]
    left.hist(words, bins=min(40, max(1, len(set(words)))), color="#4c72b0")
    for limit, _ in DENSITY:
        left.axvline(limit, color="grey", linestyle=":", linewidth=1)
    left.set(xlabel="words per image", ylabel="images", title="Words per image")
    right.bar(list(stats["density"]), list(stats["density"].values()), color="#dd8452")
    right.set(xlabel="words per image (LogicOCR buckets)", ylabel="images",
              title="Text density")
    save(fig, "words_per_image")

    fig, ax = plt.subplots(figsize=(6, 5))
    ax.scatter([i["width"] for i in stats["per_image"]],
               [i["height"] for i in stats["per_image"]], s=12, alpha=0.6, color="#4c72b0")
    ax.set(xlabel="width (px)", ylabel="height (px)", title="Image sizes")
    save(fig, "image_sizes")

    fig, ax = plt.subplots(figsize=(7, 4))
    names = list(stats["token_rules"])
    ax.boxplot([[i["tokens"][n] for i in stats["per_item"] if i["tokens"][n] is not None]
                or [0] for n in names])
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set(ylabel="vision tokens per item", title="Estimated vision tokens per item")
    save(fig, "vision_tokens")

    if "ratio" in stats:
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.boxplot([[i["ratio"][n] for i in stats["per_item"] if i["ratio"][n] is not None]
                    or [0] for n in names])
        ax.set_xticks(range(1, len(names) + 1), names)
        ax.axhline(1, color="grey", linestyle=":", linewidth=1)
        ax.set(ylabel="text tokens / vision tokens",
               title=f"Compression per item ({Path(stats['tokenizer']['name']).name})")
        save(fig, "compression")
    return written
