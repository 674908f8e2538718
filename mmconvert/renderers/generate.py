"""The generative renderer (LogicOCR): an image-generation API draws each item, context,
question and options, as a natural-looking image; a chat model picks the layout and writes the
background depiction.

Sampling is apart from the calls: ``plan()`` fixes font style, size and (unless the chat model
is asked) layout from the run seed and the item alone; ``generate()`` makes the calls; the
benchmark copy (JPEG, longer side 1024) is a pure function of the returned image.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..api.errors import ApiMalformed
from ..errors import ItemError
from ..items import Item
from ..options import OPTIONS
from ..prompts import Prompts, format_options
from ..rows import GeneratedRow
from ..seeds import rng
from .base import Renderer

if TYPE_CHECKING:  # the API client is imported when a run makes calls, not with the options
    from ..api.client import ApiClient
    from ..api.prices import Cost

LAYOUTS = ("background", "interleaved")
FONTS = ("handwritten", "standard")
WIDE, TALL, SQUARE = "1536x1024", "1024x1536", "1024x1024"
# LogicOCR's rule: contexts over 250 tokens get the background layout
LONG_TOKENS = 250
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
                    r"|\w+|[^\w\s]")
_BLANK_RUNS = re.compile(r"\n{3,}")


def count_tokens(text: str) -> int:
    """Words and punctuation marks, each CJK character one token (no tokenizer download)."""
    return len(_TOKEN.findall(text))


class GenerateOptions(BaseModel):
    """Everything that decides what is asked of the APIs."""

    model_config = OPTIONS

    image_model: str = Field("gpt-image-1", description="image-generation model")
    chat_model: str = Field("gpt-4o-mini", description="chat model for layout and depiction")
    layout: str = Field("auto", description="auto (the chat model chooses), background, "
                                            "interleaved, or tokens:N (background over N "
                                            "tokens, else interleaved)")
    font: Literal["random", "handwritten", "standard"] = Field(
        "random", description="font style; random: drawn per item from the run seed")
    size: Literal["auto", "1536x1024", "1024x1536", "1024x1024"] = Field(
        "auto", description=f"auto: {WIDE} for items over long_tokens, else {TALL}")
    long_tokens: int = Field(LONG_TOKENS, ge=1, description="size auto: the wide size above "
                                                            "this many tokens")
    quality: Literal["low", "medium", "high", "auto"] = "high"
    max_side: int = Field(1024, ge=64, le=8192, description="benchmark copy's longer side")
    jpeg_quality: int = Field(95, ge=1, le=100, description="benchmark copy's JPEG quality")
    chat_max_tokens: int = Field(300, ge=16, le=8192, description="reply limit of chat calls")

    @field_validator("layout")
    @classmethod
    def _layout(cls, value: str) -> str:
        if value in ("auto", *LAYOUTS):
            return value
        head, _, count = value.partition(":")
        if head == "tokens" and count.isdigit() and int(count) > 0:
            return value
        raise ValueError("expected auto, background, interleaved or tokens:N (N > 0)")


@dataclass(frozen=True)
class Plan:
    """What is fixed before any call: ``layout`` is ``auto`` when the chat model decides."""

    layout: str
    font: str
    size: str
    tokens: int


@dataclass
class Generated:
    plan: Plan
    layout: str
    template: str
    prompt: str
    depiction: str | None
    original: bytes
    original_format: str
    original_size: tuple[int, int]
    jpeg: bytes
    size: tuple[int, int]
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def cost(self) -> float | None:
        costs = [c["cost"]["usd"] for c in self.calls.values()]
        return None if any(c is None for c in costs) else round(sum(costs), 6)


def image_text(item: Item) -> str:
    """The text the image must show, in order: context, question, lettered options."""
    parts = [item.context or "", item.question or "", format_options(item.options)]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def tidy(prompt: str) -> str:
    """A filled template without the blank runs an empty placeholder leaves."""
    return _BLANK_RUNS.sub("\n\n", prompt).strip() + "\n"


def parse_layout(reply: str) -> str:
    words = set(re.findall(r"[a-z]+", reply.lower()))
    found = {"background"} & words | ({"interleaved"} if words & {"interleaved",
                                                                  "illustration"} else set())
    if len(found) != 1:
        raise ApiMalformed(f"chat API (layout): the reply names {'both' if found else 'neither'}"
                           f" layout: {reply[:80]!r}")
    return found.pop()


def parse_depiction(reply: str) -> str:
    text = " ".join(reply.split()).strip("\"'“”")
    if not text:
        raise ApiMalformed("chat API (depiction): empty reply")
    return text


def benchmark_copy(data: bytes, max_side: int, quality: int) -> tuple[bytes, tuple[int, int],
                                                                      str, tuple[int, int]]:
    """The returned image as the benchmark's JPEG: RGB (transparency over white), longer side
    at most ``max_side`` (Lanczos), 4:4:4 chroma so coloured text keeps its edges.
    Returns (jpeg, its size, the original's format, the original's size)."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            original_format = (image.format or "").lower()
            original_size = image.size
            if image.mode in ("RGBA", "LA", "P"):
                rgba = image.convert("RGBA")
                flat = Image.new("RGB", rgba.size, "white")
                flat.paste(rgba, mask=rgba.getchannel("A"))
                image = flat
            elif image.mode != "RGB":
                image = image.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as err:
        raise ApiMalformed(f"image API: the returned image cannot be decoded ({err})") from None
    scale = max_side / max(image.size)
    if scale < 1:
        image = image.resize((max(1, round(image.width * scale)),
                              max(1, round(image.height * scale))), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality, subsampling=0)
    return out.getvalue(), image.size, original_format, original_size


class ImageApiRenderer(Renderer):
    """LogicOCR-style generated images of whole items."""

    name = "generate"
    version = "1"
    row_model = GeneratedRow
    options_model = GenerateOptions
    roles = shown_roles = ocr_roles = ("generated",)
    checks = frozenset({"ocr", "options", "image"})
    ocr_psm = 3  # a natural image: Tesseract finds the text blocks itself
    ocr_edge_words = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ImageApiRenderer:
        """Without an API client: what it can do is plan and estimate; a row's image comes
        back from the response cache with one (``GenerateJob``)."""
        from ..prompts import Prompts

        return cls(cls.options_from(params), Prompts(None), None)

    def sample(self, item: Item, seed: int) -> dict[str, Any]:
        plan = self.plan(item, seed)
        return {"layout": plan.layout, "font": plan.font, "size": plan.size,
                "tokens": plan.tokens}

    @classmethod
    def expected_text(cls, row: dict[str, Any]) -> str:
        return row.get("text_in_image") or ""

    def __init__(self, options: GenerateOptions, prompts: Prompts, api: ApiClient | None):
        self.options = options
        self.prompts = prompts
        self.api = api

    # --- sampling (no calls) -------------------------------------------------------------

    def plan(self, item: Item, seed: int) -> Plan:
        options = self.options
        tokens = count_tokens(image_text(item))
        font = options.font
        if font == "random":
            font = rng(seed, "generate-font", item.id).choice(FONTS)
        layout = options.layout
        if layout.startswith("tokens:"):
            layout = "background" if tokens > int(layout.partition(":")[2]) else "interleaved"
        size = options.size
        if size == "auto":
            size = WIDE if tokens > options.long_tokens else TALL
        return Plan(layout, font, size, tokens)

    def values(self, item: Item) -> dict[str, str]:
        return {"context": (item.context or "").strip(), "question": (item.question or "").strip(),
                "options": format_options(item.options), "text": image_text(item)}

    def chat_params(self, prompt: str) -> dict[str, Any]:
        return {"model": self.options.chat_model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0, "max_completion_tokens": self.options.chat_max_tokens}

    def image_params(self, prompt: str, size: str) -> dict[str, Any]:
        return {"model": self.options.image_model, "prompt": prompt, "size": size,
                "quality": self.options.quality, "n": 1}

    def chat_prompt(self, purpose: str, values: dict[str, str], keys: tuple[str, ...]) -> str:
        return tidy(self.prompts.fill(f"generate_{purpose}", values, keys))

    def image_prompt(self, layout: str, font: str, values: dict[str, str],
                     keys: tuple[str, ...]) -> tuple[str, str]:
        template = f"generate_{layout}_{font}"
        return template, tidy(self.prompts.fill(template, values, keys))

    def chat_estimate(self, prompt: str) -> Cost:
        return self.api.prices.chat_estimate(self.options.chat_model, prompt,
                                             self.options.chat_max_tokens)

    def image_estimate(self, prompt: str, size: str) -> Cost:
        quality = "high" if self.options.quality == "auto" else self.options.quality
        return self.api.prices.image_estimate(self.options.image_model, quality, size, prompt)

    # --- calls ---------------------------------------------------------------------------

    def _chat(self, purpose: str, item: Item, seed: int, values, keys, parse, calls):
        prompt = self.chat_prompt(purpose, values, keys)
        result = self.api.chat(self.chat_params(prompt), item_id=item.id, seed=seed,
                               estimate=self.chat_estimate(prompt), purpose=purpose,
                               parse=parse)
        calls[purpose] = result.provenance()
        return result.data["parsed"]

    def generate(self, item: Item, seed: int, keys: tuple[str, ...] = ()) -> Generated:
        if not image_text(item):
            raise ItemError("nothing to draw (no context, question or options)",
                            where=item.origin or item.id, field="question")
        plan = self.plan(item, seed)
        values = self.values(item)
        calls: dict[str, dict[str, Any]] = {}
        layout = plan.layout
        if layout == "auto":
            layout = self._chat("layout", item, seed, values, keys, parse_layout, calls)
        depiction = None
        if layout == "background":
            depiction = self._chat("depiction", item, seed, values, keys, parse_depiction,
                                   calls)
        template, prompt = self.image_prompt(layout, plan.font,
                                             {**values, "depiction": depiction or ""}, keys)
        params = self.image_params(prompt, plan.size)
        result = self.api.image(params, item_id=item.id, seed=seed,
                                estimate=self.image_estimate(prompt, plan.size))
        calls["image"] = {**result.provenance(), "size": plan.size,
                          "quality": self.options.quality}
        original = result.data["image"]
        jpeg, size, fmt, original_size = benchmark_copy(original, self.options.max_side,
                                                        self.options.jpeg_quality)
        return Generated(plan, layout, template, prompt, depiction, original, fmt,
                         original_size, jpeg, size, calls)
