"""What a worker does with one item for each kind of run: draw it and return its manifest row
with the bytes of its files (``runfolder.Output``); the converter's sink writes them. The
converter is the same for every kind."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from .config import ApiOptions, GenerateConfig, OccludeConfig, RenderConfig, RunConfig
from .corpora import Corpus
from .errors import UsageError
from .items import Item, RenderPart
from .prompts import Prompts
from .renderers.fonts import font_chain, font_manifest
from .renderers.generate import FONTS, LAYOUTS, image_text
from .runfolder import Output, item_file


def layout_file(output: Output, item_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """A page item's layout (``layout/<id>.json``), which PPI sweeps re-draw."""
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    rel = item_file("layout", item_id, ".json")
    return {"path": rel, "pages": len(record["pages"]),
            "lines": sum(len(page) for page in record["pages"]), **output.file(rel, data)}


class Job:
    """What every kind of run shares: its renderer names the unit of its images.

    A worker takes the items in groups of ``batch`` consecutive tasks (the same groups for any
    executor and worker count), calls ``prepare`` on each group's items, then ``run`` on each
    item: a job whose work is cheaper in bulk (the occluder's entity model) does it there.
    """

    renderer: Any
    batch = 1

    def prepare(self, items: list[Item]) -> None:
        """Work done once for a group of items before each is run (none by default)."""

    @property
    def unit(self) -> str:
        return self.renderer.unit


def row_head(item: Item, renderer, params: dict[str, Any], seed: int) -> dict[str, Any]:
    return {"id": item.id, "corpus": item.corpus, "subset": item.subset, "split": item.split,
            "language": item.language,
            "renderer": {"name": renderer.name, "version": renderer.version, "params": params},
            "seed": seed}


class PageJob(Job):
    """``mmconvert render``: the chosen part of each item on A4 page images."""

    def __init__(self, config: RenderConfig):
        from .renderers.page import PageRenderer

        self.config = config
        self.renderer = PageRenderer(config.page)
        self.prompts = Prompts(config.prompt_dir)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return self.config.page.render or corpus.part_for(item)

    def fonts(self) -> list[dict[str, str]]:
        return font_manifest()

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, output = self.config, Output()
        result = self.renderer.render(item, part, want_pdf=config.pdf)
        prompt, text_prompt = self.prompts.pair(item, part, config.prompt_style, prompt_keys)
        images = [output.image(item_file("images", item.id, f"_p{number:03d}.png"), page.png,
                               "page", page.width, page.height, ppi=config.page.ppi)
                  for number, page in enumerate(result.pages, start=1)]
        row = row_head(item, self.renderer,
                       {**config.page.model_dump(mode="json"), "render": part}, config.seed)
        row["images"] = images
        row["layout"] = layout_file(output, item.id, result.layout)
        if result.pdf is not None:
            rel = item_file("pdf", item.id, ".pdf")
            output.file(rel, result.pdf)
            row["pdf"] = rel
        row.update({
            "prompt_style": config.prompt_style, "prompt": prompt, "text_prompt": text_prompt,
            "question": item.question, "context": item.context, "options": item.options,
            "answer": item.answer, "metadata": item.metadata,
        })
        output.row = row
        return output


class OccludeJob(Job):
    """``mmconvert occlude``: image over caption with spans partly covered (VCR)."""

    batch = 32  # captions a worker sends through spaCy's nlp.pipe at once

    def __init__(self, config: OccludeConfig):
        from .renderers.occlude import CaptionOccluder

        self.config = config
        self.renderer = CaptionOccluder(config.occlude, language=config.language)
        self.prompts = Prompts(config.prompt_dir)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return "context"

    def fonts(self) -> list[dict[str, str]]:
        seen: dict[str, dict[str, str]] = {}
        for face in self.renderer.fonts():
            for entry in font_manifest(font_chain(face)):
                seen.setdefault(entry["name"], entry)
        return list(seen.values())

    def prepare(self, items: list[Item]) -> None:
        self.renderer.prepare(items, self.config.seed)

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, output = self.config, Output()
        result = self.renderer.render(item, config.seed)
        params = result.params
        width, height = result.size
        images = [
            output.image(item_file("images", item.id, "_stacked.png"), result.stacked,
                        "stacked", width, height, boxes=span_boxes(result.boxes["stacked"])),
            output.image(item_file("images", item.id, "_text.png"), result.text_only,
                        "text_only", width, height,
                        boxes=span_boxes(result.boxes["text_only"])),
        ]
        values = {"count": str(len(params.spans)),
                  "masked_caption": masked_caption(result.shown, params.spans)}
        row = row_head(item, self.renderer, {
            **config.occlude.model_dump(mode="json"), **params.as_dict(),
            # the entity filter as it ran: a language with no entity model (Chinese) had none,
            # whatever --ner asked, so the params and the row's ``ner`` agree
            "ner": config.occlude.ner and self.renderer.chooser(params.language).ner != "none",
            "line_height": result.line_height, "band_rows": list(result.band)}, config.seed)
        row.update({
            "images": images,
            "prompt": self.prompts.fill("vcr_image", values, prompt_keys),
            "text_prompt": self.prompts.fill("vcr_text", values, prompt_keys),
            "caption": result.caption, "caption_in_image": result.shown,
            "masked_spans": [span.as_dict() for span in params.spans],
            "answer": [span.text for span in params.spans],
            "difficulty": params.difficulty, "position": params.position, "font": params.font,
            "ner": self.renderer.chooser(params.language).ner, "lines": result.lines,
            "source_image": item.image if isinstance(item.image, str) else None,
            "metadata": item.metadata,
        })
        output.row = row
        return output


class GenerateJob(Job):
    """``mmconvert generate``: each whole item drawn by an image-generation API (LogicOCR).

    Runs in threads (``threads`` requests in flight), since it waits on the network; the API
    client, its response cache and the budget are shared by them.
    """

    def __init__(self, config: GenerateConfig, api: ApiOptions | None = None, *,
                 dry_run: bool = False):
        from .api.client import ApiClient
        from .renderers.generate import ImageApiRenderer

        self.config = config
        self.api_options = api or ApiOptions()
        self.api = ApiClient(self.api_options)
        self.prompts = Prompts(config.prompt_dir)
        self.renderer = ImageApiRenderer(config.generate, self.prompts, self.api)
        self.threads = self.api_options.concurrency
        self._check(dry_run)

    def _check(self, dry_run: bool) -> None:
        """Fail before the first request: templates, keys, and prices when there is a
        budget."""
        options = self.config.generate
        chat = options.layout != "interleaved"
        names = [f"generate_{layout}_{font}" for layout in LAYOUTS for font in FONTS]
        names += ["generate_depiction"] if chat else []
        names += ["generate_layout"] if options.layout == "auto" else []
        for name in names:
            self.prompts.template(name)
        if not dry_run:
            try:
                import openai  # noqa: F401
            except ImportError:
                raise UsageError("generate needs the openai client: pip install "
                                 "'mmconvert[generate]'") from None
            self.api.check_keys(("image", "chat") if chat else ("image",))
        if self.api_options.budget is not None:
            for model in [options.image_model] + ([options.chat_model] if chat else []):
                if not self.api.prices.has(model):
                    raise UsageError(
                        f"--budget needs a price for {model}, which the price table "
                        f"({self.api.prices.origin}) lacks; give --price-table FILE with "
                        f'{{"models": {{"{model}": {{"per_million_tokens": {{...}}}}}}}}')

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return "all"

    def fonts(self) -> list[dict[str, str]]:
        return []  # the image model draws the type

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        config, options, output = self.config, self.config.generate, Output()
        made = self.renderer.generate(item, config.seed, prompt_keys)
        ext = {"jpeg": "jpg"}.get(made.original_format, made.original_format or "bin")
        original = item_file("originals", item.id, f".{ext}")
        output.file(original, made.original)
        images = [output.image(item_file("images", item.id, ".jpg"), made.jpeg, "generated",
                              *made.size)]
        prompt, text_prompt = self.prompts.pair(item, "all", config.prompt_style, prompt_keys)
        chat_used = bool({"layout", "depiction"} & set(made.calls))
        row = row_head(item, self.renderer, {
            **options.model_dump(mode="json"), "layout": made.layout, "font": made.plan.font,
            "size": made.plan.size, "tokens": made.plan.tokens}, config.seed)
        row.update({
            "images": images,
            "original": {"path": original, "format": made.original_format,
                         "width": made.original_size[0], "height": made.original_size[1],
                         "sha256": hashlib.sha256(made.original).hexdigest()},
            "prompt_style": config.prompt_style, "prompt": prompt, "text_prompt": text_prompt,
            "question": item.question, "context": item.context, "options": item.options,
            "answer": item.answer, "metadata": item.metadata,
            "text_in_image": image_text(item),
            "generation": {
                "template": made.template, "image_prompt": made.prompt, "layout": made.layout,
                "layout_from": "chat" if made.plan.layout == "auto" else options.layout,
                "font": made.plan.font, "depiction": made.depiction,
                "image_model": options.image_model,
                "chat_model": options.chat_model if chat_used else None,
                "size": made.plan.size, "quality": options.quality,
                "benchmark_copy": {"format": "jpeg", "quality": options.jpeg_quality,
                                   "subsampling": "4:4:4", "max_side": options.max_side,
                                   "resample": "lanczos"}},
            "provenance": {"cost_usd": made.cost, "calls": made.calls},
        })
        output.row = row
        return output

    def dry_run(self, tasks) -> tuple[list[str], str]:
        """``--dry-run``: each item's prompts, and a summary of counts and estimated cost;
        nothing is called. With ``--layout auto`` both layouts' image prompts are shown and the
        estimate assumes the dearer path (layout choice, depiction, image)."""
        renderer, seed = self.renderer, self.config.seed
        blocks: list[str] = []
        counts: dict[str, Counter[str]] = {"layout": Counter(), "font": Counter(),
                                           "size": Counter()}
        usd = {"image": 0.0, "chat": 0.0}
        requests, cached, unpriced = Counter(), 0, set()
        for item, _, keys in tasks:
            plan = renderer.plan(item, seed)
            for name in counts:
                counts[name][getattr(plan, name)] += 1
            values = renderer.values(item)
            blocks.append(f"=== {item.id}: layout {plan.layout}, font {plan.font}, size "
                          f"{plan.size}, {plan.tokens} tokens")
            layouts = LAYOUTS if plan.layout == "auto" else (plan.layout,)
            chats = (["layout"] if plan.layout == "auto" else []) + (
                ["depiction"] if "background" in layouts else [])
            for purpose in chats:
                prompt = renderer.chat_prompt(purpose, values, keys)
                blocks += [f"--- chat ({purpose}), {self.config.generate.chat_model}", prompt]
                cost = renderer.chat_estimate(prompt)
                usd["chat"] += cost.usd or 0.0
                requests["chat"] += 1
                if cost.usd is None:
                    unpriced.add(self.config.generate.chat_model)
            image_costs = []
            for layout in layouts:
                depiction = "<depiction written by the chat model>" * (layout == "background")
                template, prompt = renderer.image_prompt(layout, plan.font,
                                                         {**values, "depiction": depiction}, keys)
                blocks += [f"--- image ({template}), {self.config.generate.image_model}",
                           prompt]
                image_costs.append(renderer.image_estimate(prompt, plan.size))
                if layout == "interleaved" and plan.layout == "interleaved":
                    cached += self.api.cached("image", renderer.image_params(prompt, plan.size),
                                              item.id, seed)
            requests["image"] += 1
            usd["image"] += max(c.usd or 0.0 for c in image_costs)
            if any(c.usd is None for c in image_costs):
                unpriced.add(self.config.generate.image_model)
        summary = (f"dry run: {len(tasks)} item(s); "
                   + "; ".join(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
                               for name, c in counts.items())
                   + f"; requests: {requests['image']} image, at most {requests['chat']} chat; "
                   f"estimated cost ${usd['image'] + usd['chat']:.2f} (image "
                   f"${usd['image']:.2f}, chat ${usd['chat']:.4f}; prices "
                   f"{self.api.prices.origin}, as of {self.api.prices.as_of})")
        if unpriced:
            summary += f"; no price for {', '.join(sorted(unpriced))} (counted as $0)"
        if cached:
            summary += f"; {cached} image response(s) already cached (free)"
        return blocks, summary + "; nothing was called"

    def report(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Spend and usage per item and in total over the run folder's manifest, and what
        this invocation asked and paid."""
        per_item: dict[str, float | None] = {}
        usage: Counter[str] = Counter()
        for row in rows:
            provenance = row.get("provenance") or {}
            per_item[row["id"]] = provenance.get("cost_usd")
            for purpose, call in (provenance.get("calls") or {}).items():
                for name, value in (call.get("usage") or {}).items():
                    if isinstance(value, int):
                        usage[f"{purpose}_{name}"] += value
        priced = [v for v in per_item.values() if v is not None]
        return {"spend": {"total_usd": round(sum(priced), 6),
                          "items_unpriced": len(per_item) - len(priced),
                          "usage": dict(sorted(usage.items())), "per_item_usd": per_item},
                "api": {"options": self.api_options.record(), "this_run": self.api.report()}}


def span_boxes(boxes) -> list[dict[str, Any]]:
    """The bands of an image as manifest entries: the covered span (an index into
    ``masked_spans``) and its box [left, top, right, bottom] in pixels, right and bottom
    exclusive. Post-processing (scale, rotate) moves them with the image."""
    return [{"span": span, "box": box} for span, box in boxes]


def masked_caption(text: str, spans, blank: str = "[___]") -> str:
    """``text`` with each span replaced by ``blank`` (the text-only twin's caption)."""
    out, pos = [], 0
    for span in spans:
        out += [text[pos:span.start], blank]
        pos = span.end
    return "".join(out + [text[pos:]])


Job = PageJob | OccludeJob | GenerateJob


def job_for(config: RunConfig, api: ApiOptions | None = None) -> Job:
    if isinstance(config, GenerateConfig):
        return GenerateJob(config, api)
    return OccludeJob(config) if isinstance(config, OccludeConfig) else PageJob(config)
