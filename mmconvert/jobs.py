"""What a worker does with one item for each kind of run: draw it, write its image files
(atomically) and return its manifest row. The converter is the same for every kind."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .config import OccludeConfig, RenderConfig, RunConfig
from .corpora import Corpus
from .items import Item, RenderPart
from .manifest import atomic_write
from .prompts import Prompts
from .renderers.fonts import font_chain, font_manifest


def write_image(out: Path, rel: str, png: bytes, role: str, width: int, height: int,
                **extra: Any) -> dict[str, Any]:
    """Write one PNG of the run and describe it for the manifest's ``images``."""
    atomic_write(out / rel, png)
    return {"path": rel, "role": role, "width": width, "height": height, **extra,
            "sha256": hashlib.sha256(png).hexdigest()}


def row_head(item: Item, renderer, params: dict[str, Any], seed: int) -> dict[str, Any]:
    return {"id": item.id, "corpus": item.corpus, "subset": item.subset, "split": item.split,
            "language": item.language,
            "renderer": {"name": renderer.name, "version": renderer.version, "params": params},
            "seed": seed}


class PageJob:
    """``mmconvert render``: the chosen part of each item on A4 page images."""

    unit = "page"

    def __init__(self, config: RenderConfig, out: Path):
        from .renderers.page import PageRenderer

        self.config, self.out = config, out
        self.renderer = PageRenderer(config.page)
        self.prompts = Prompts(config.prompt_dir)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return self.config.page.render or corpus.part_for(item)

    def fonts(self) -> list[dict[str, str]]:
        return font_manifest()

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> dict[str, Any]:
        config = self.config
        result = self.renderer.render(item, part, want_pdf=config.pdf)
        prompt, text_prompt = self.prompts.pair(item, part, config.prompt_style, prompt_keys)
        images = [write_image(self.out, f"images/{item.id}_p{number:03d}.png", page.png, "page",
                              page.width, page.height, ppi=config.page.ppi)
                  for number, page in enumerate(result.pages, start=1)]
        row = row_head(item, self.renderer,
                       {**config.page.model_dump(mode="json"), "render": part}, config.seed)
        row["images"] = images
        if result.pdf is not None:
            rel = f"pdf/{item.id}.pdf"
            atomic_write(self.out / rel, result.pdf)
            row["pdf"] = rel
        row.update({
            "prompt_style": config.prompt_style, "prompt": prompt, "text_prompt": text_prompt,
            "question": item.question, "context": item.context, "options": item.options,
            "answer": item.answer, "metadata": item.metadata,
        })
        return row


class OccludeJob:
    """``mmconvert occlude``: image over caption with spans partly covered (VCR)."""

    unit = "image"

    def __init__(self, config: OccludeConfig, out: Path):
        from .renderers.occlude import CaptionOccluder

        self.config, self.out = config, out
        self.occluder = CaptionOccluder(config.occlude, language=config.language)
        self.prompts = Prompts(config.prompt_dir)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return "context"

    def fonts(self) -> list[dict[str, str]]:
        seen: dict[str, dict[str, str]] = {}
        for face in self.occluder.fonts():
            for entry in font_manifest(font_chain(face)):
                seen.setdefault(entry["name"], entry)
        return list(seen.values())

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> dict[str, Any]:
        config = self.config
        result = self.occluder.render(item, config.seed)
        params = result.params
        width, height = result.size
        images = [
            write_image(self.out, f"images/{item.id}_stacked.png", result.stacked, "stacked",
                        width, height),
            write_image(self.out, f"images/{item.id}_text.png", result.text_only, "text_only",
                        width, height),
        ]
        values = {"count": str(len(params.spans)),
                  "masked_caption": masked_caption(result.shown, params.spans)}
        row = row_head(item, self.occluder, {
            **config.occlude.model_dump(mode="json"), **params.as_dict(),
            "line_height": result.line_height, "band_rows": list(result.band)}, config.seed)
        row.update({
            "images": images,
            "prompt": self.prompts.fill("vcr_image", values, prompt_keys),
            "text_prompt": self.prompts.fill("vcr_text", values, prompt_keys),
            "caption": result.caption, "caption_in_image": result.shown,
            "masked_spans": [span.as_dict() for span in params.spans],
            "answer": [span.text for span in params.spans],
            "difficulty": params.difficulty, "position": params.position, "font": params.font,
            "ner": self.occluder.chooser(params.language).ner, "lines": result.lines,
            "source_image": item.image if isinstance(item.image, str) else None,
            "metadata": item.metadata,
        })
        return row


def masked_caption(text: str, spans, blank: str = "[___]") -> str:
    """``text`` with each span replaced by ``blank`` (the text-only twin's caption)."""
    out, pos = [], 0
    for span in spans:
        out += [text[pos:span.start], blank]
        pos = span.end
    return "".join(out + [text[pos:]])


def job_for(config: RunConfig, out: Path) -> PageJob | OccludeJob:
    return OccludeJob(config, out) if isinstance(config, OccludeConfig) else PageJob(config, out)
