"""A recipe's fingerprints: what its pages were made with here (``made_with``: the canonical
config, mmconvert's, the renderer's and the libraries' versions, the fonts), its reference
items' page hashes, and checking both against a recipe's record (``verify``, ``compare``), which
``mmconvert recipe verify`` and every run drawn from a recipe (``fingerprint_note``) ask."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__, installed_version
from ..errors import UsageError
from ..renderers import renderer_class, row_renderer
from ..rows import Row
from . import REFERENCE_ITEMS, Drawer, PageHash, Recipe, Reference, digest, dump


def shown_text(row: Row) -> str:
    """The text a drawn row's shown images hold (its renderer's ``expected_text``)."""
    return row_renderer(row).expected_text(row)


def page_hash(data: bytes) -> PageHash:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    pixels = hashlib.sha256(f"{image.mode} {image.width}x{image.height}\n".encode()
                            + image.tobytes()).hexdigest()
    return PageHash(sha256=hashlib.sha256(data).hexdigest(), pixels=pixels,
                    width=image.width, height=image.height)


# the run config's fields that decide no pixel: which items are read, and where and how the
# files are stored; every other field (a renderer's option, the style and its file's sha256,
# the target, the transforms, the seed, the scope) is in a recipe's canonical config
NOT_DRAWING = frozenset({"corpus", "source", "subsets", "split", "corpus_options", "dedup",
                         "sample", "limit", "on_error", "store", "shard_rows", "prompt_dir",
                         "pdf"})


def drawing_config(drawer: Drawer) -> dict[str, Any]:
    """The canonical config of a recipe's drawing: every field of the run config it draws
    with that reaches a pixel, defaults included."""
    data = drawer.config.model_dump(mode="json")
    config = {key: value for key, value in data.items() if key not in NOT_DRAWING}
    style = config.get("style")
    if isinstance(style, dict) and style.get("sha256"):
        # the style's file is bound by its sha256; its name is how the recipe found it (a
        # relative path, made absolute for a harness folder), which decides no pixel
        config["style"] = {k: v for k, v in style.items() if k != "name"}
    return config


def made_with(drawer: Drawer) -> dict[str, Any]:
    """What a recipe's pages were made with here: the canonical config and its digest,
    mmconvert's version, the renderer's, the libraries that draw and encode, the fonts
    (sha256) and, for documents, Chromium."""
    job = drawer.job
    config = drawing_config(drawer)
    record: dict[str, Any] = {
        "config": config,
        "config_sha256": digest(config),
        "mmconvert": __version__,
        "renderer": {"name": job.renderer.name, "version": job.renderer.version},
        "libraries": {name: installed_version(name) for name in ("pymupdf", "pillow", "zlib-ng",
                                                                 "uharfbuzz")},
        "fonts": {font["name"]: font["sha256"] for font in job.fonts()},
    }
    browser = job.report(lambda: []).get("browser") if hasattr(job, "report") else None
    if browser:
        record["chromium"] = f"{browser.get('name')} {browser.get('version')}"
    return record


def make_recipe(recipe: Recipe) -> Recipe:
    """``recipe`` with its ``made_with`` and its references' page hashes as this machine
    draws them (its own reference items, or the shipped ones)."""
    drawer = Drawer(recipe)
    items = [ref.item for ref in recipe.references] or REFERENCE_ITEMS
    references = [Reference(item=item, item_sha256=digest(item),
                            pages=[page_hash(p) for p in drawer.draw(item, index).pages])
                  for index, item in enumerate(items)]
    return recipe.model_copy(update={"made_with": made_with(drawer),
                                     "references": references})


@dataclass
class Verdict:
    """``identical``: every reference page and setting is the recipe's; ``lines``: what
    differs and why, or (identical) notes of versions that differ and draw the same."""

    identical: bool
    lines: list[str]
    # how many reference pages (or references, by their page count) differ
    pages: int = 0


def paid(recipe: Recipe) -> bool:
    """Whether the recipe's renderer draws through a paid API (``Renderer.paid``)."""
    return renderer_class(recipe.renderer, f"recipe {recipe.name}: renderer").paid


def verify(recipe: Recipe, *, allow_paid: bool = False) -> Verdict:
    """Draw the recipe's reference items here and compare their pages with its fingerprint:
    identical, or each difference and why: a setting that differs from those the
    fingerprint was made with (by name), a version or font, or a fingerprint edited by hand
    (a recorded field that does not match its page, a config that does not match its
    digest). A recipe whose renderer draws through a paid API is drawn only with
    ``allow_paid``; else a UsageError says so, and nothing is sent."""
    if not recipe.references:
        return Verdict(False, [f"recipe {recipe.name} has no fingerprint (no references): "
                               "nothing to verify; mmconvert recipe make adds one"])
    if paid(recipe) and not allow_paid:
        raise UsageError(f"its {recipe.renderer} renderer draws through a paid API: verifying "
                         f"draws its {len(recipe.references)} reference item(s) there; "
                         "--allow-paid does, nothing is sent without it")
    drawer = Drawer(recipe)
    drawn = [[page_hash(p) for p in drawer.draw(reference.item, index).pages]
             for index, reference in enumerate(recipe.references)]
    return compare_pages(recipe, drawn, made_with(drawer))


def compare_pages(recipe: Recipe, drawn: list[list[PageHash]], here: dict[str, Any]) -> Verdict:
    """``recipe``'s fingerprint against its reference pages as drawn here (``drawn``, one list
    of pages a reference) and what they were made with here (``here``, ``made_with``)."""
    lines: list[str] = []
    differ = 0
    for index, (reference, pages) in enumerate(zip(recipe.references, drawn, strict=True)):
        item_id = reference.item.get("id", f"#{index}")
        if reference.item_sha256 is None:
            lines.append(f"{item_id}: the recipe records no digest of the item (item_sha256): "
                         "its fingerprint predates them; mmconvert recipe make records them")
        elif reference.item_sha256 != digest(reference.item):
            lines.append(f"{item_id}: the item is not the one its pages were drawn from "
                         "(item_sha256): the fingerprint was edited")
        if len(pages) != len(reference.pages):
            lines.append(f"{item_id}: {len(pages)} page(s), the recipe's {len(reference.pages)}")
            differ += 1
            continue
        for number, (got, want) in enumerate(zip(pages, reference.pages, strict=True), 1):
            if got.sha256 == want.sha256:
                edited = [name for name in ("pixels", "width", "height")
                          if getattr(got, name) != getattr(want, name)]
                if edited:
                    differ += 1
                    lines.append(f"{item_id} page {number}: the same file, but the recipe's "
                                 f"{' and '.join(edited)} are not its page's: the fingerprint "
                                 "was edited")
                continue
            differ += 1
            if (got.width, got.height) != (want.width, want.height):
                lines.append(f"{item_id} page {number}: {got.width}x{got.height} px, the "
                             f"recipe's {want.width}x{want.height}")
            elif got.pixels == want.pixels:
                lines.append(f"{item_id} page {number}: the same pixels, encoded otherwise")
            else:
                lines.append(f"{item_id} page {number}: other pixels")
    settings = setting_differences(recipe.made_with, here)
    if settings and not lines:
        lines.append("the reference pages are the same, but the settings are not those the "
                     "fingerprint was made with")
    recorded = {k: v for k, v in recipe.made_with.items() if k not in CONFIG_KEYS}
    versions = differences(recorded, {k: v for k, v in here.items() if k not in CONFIG_KEYS})
    if not lines:  # the same pages: what was made otherwise is said, and does not fail
        return Verdict(True, [f"note: {why} (the pages are the same)" for why in versions])
    whys = [f"why: {why}" for why in settings + versions] or [
        "why: nothing the recipe records differs here: mmconvert's own drawing of these "
        "settings changed"]
    return Verdict(False, lines + whys, differ)


CONFIG_KEYS = ("config", "config_sha256")


def setting_differences(recorded: dict[str, Any], here: dict[str, Any]) -> list[str]:
    """The settings (``made_with.config``) a recipe's fingerprint was made with that differ
    from those its fields give here, each by its dotted name; a recorded config that does not
    match its own digest, or none recorded, is said as such."""
    config = recorded.get("config")
    if not isinstance(config, dict):
        return ["the recipe records no settings (made_with.config): its fingerprint predates "
                "them; mmconvert recipe make records them"]
    if digest(config) != recorded.get("config_sha256"):
        return ["the recipe's made_with.config does not match its config_sha256: the "
                "fingerprint was edited"]
    return [f"setting {name}: the fingerprint was made with {shown_value(a)}, the recipe now "
            f"gives {shown_value(b)}" for name, a, b in leaf_differences(config, here["config"])]


def leaf_differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where two JSON values differ, by dotted path to each differing leaf."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(a) | set(b), key=str):
            out += leaf_differences(a.get(key), b.get(key), f"{path}.{key}" if path else key)
        return out
    return [] if a == b else [(path, a, b)]


def shown_value(value: Any) -> str:
    import json

    return "none" if value is None else json.dumps(value, ensure_ascii=False) \
        if not isinstance(value, (int, float)) or isinstance(value, bool) else str(value)


_VERDICTS: dict[str, Verdict] = {}  # a recipe's verdict here, by its whole text


def _checked(recipe: Recipe) -> Verdict:
    key = dump(recipe)
    if key not in _VERDICTS:
        _VERDICTS[key] = verify(recipe)
    return _VERDICTS[key]


def fingerprint_note(recipe: Recipe, given: str | Path | None = None) -> str | None:
    """One line when ``recipe``'s reference pages draw otherwise on this machine (what
    differs first, and the first reason), or None when they are identical or it has none.
    Said wherever a recipe draws (render, convert, frontier, harness), never hidden;
    ``given``: the name or file the user gave, for the hint."""
    if not recipe.references:
        return None
    if paid(recipe):  # never a paid call unasked: the check is said to be skipped
        return (f"recipe {recipe.name}: its fingerprint is not checked here: its "
                f"{recipe.renderer} renderer draws through a paid API (mmconvert recipe "
                f"verify --allow-paid {given or recipe.name} checks it)")
    verdict = _checked(recipe)
    if verdict.identical:
        return None
    said = [line for line in verdict.lines if not line.startswith("why: ")]
    why = [line for line in verdict.lines if line.startswith("why: ")]
    return (f"recipe {recipe.name}: its fingerprint differs here ({said[0]}"
            + (f"; {why[0]}" if why else "")
            + (f"; {verdict.pages} page(s) differ" if verdict.pages else "") + "): these pages "
            f"are not the recipe's; mmconvert recipe verify {given or recipe.name} says all")


def run_record(recipe: Recipe, given: str | Path, note: str | None) -> dict[str, Any]:
    """What run.json records of the recipe a run was drawn with: its name, the name or file
    it was given as, its canonical config's digest, and its fingerprint's verdict here."""
    return {"name": recipe.name, "given": str(given),
            "config_sha256": recipe.made_with.get("config_sha256"),
            "fingerprint": note or ("identical" if recipe.references else "none")}


def differences(recorded: dict[str, Any], here: dict[str, Any], path: str = "") -> list[str]:
    """What the recipe records it was made with that this machine has otherwise."""
    out = []
    for key in sorted(set(recorded) | set(here)):
        a, b = recorded.get(key), here.get(key)
        name = f"{path}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, name + " ")
        elif a != b:
            out.append(f"{name}: the recipe's {a if a is not None else 'none'}, here "
                       f"{b if b is not None else 'none'}")
    return out

