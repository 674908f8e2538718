"""The generative renderer (LogicOCR): an image-generation API draws each item, context,
question and options, as a natural-looking image; a chat model picks the layout and writes the
background depiction.

Sampling is apart from the calls: ``plan()`` fixes font style, size and (unless the chat model
is asked) layout from the run seed and the item alone; ``generate()`` makes the calls; the
benchmark copy (JPEG, longer side 1024) is a pure function of the returned image.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..api.errors import ApiMalformed
from ..config import ApiOptions, RunConfig
from ..errors import ItemError, UsageError, needs
from ..imaging import on_white
from ..items import Item, RenderPart
from ..jobs import Job, question_fields, row_head
from ..options import OPTIONS
from ..prompts import Prompts, format_options
from ..rows import GeneratedRow, Row
from ..runfolder import Output, item_file
from ..seeds import rng
from .base import Profile, Renderer

if TYPE_CHECKING:  # the API client is imported when a run makes calls, not with the options
    from ..api.client import ApiClient
    from ..api.prices import Cost
    from ..corpora import Corpus

LAYOUTS = ("background", "interleaved")
FONTS = ("handwritten", "standard")
WIDE, TALL = "1536x1024", "1024x1536"
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
    quality: Literal["low", "medium", "high", "auto"] = Field("high",
                                                              description="image quality")
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


class GenerateConfig(RunConfig):
    """A ``generate`` run: which items, how the image API is asked to draw them, what to
    write. Where the servers are and how much may be spent are ``ApiOptions``."""

    renderer: Literal["generate"] = "generate"
    generate: GenerateOptions = Field(default_factory=GenerateOptions)
    prompt_style: Literal["cot", "direct"] = Field(
        "cot", description="style of the manifest's evaluation prompts")


@dataclass(frozen=True)
class DrawingPlan:
    """What is fixed before any call: ``layout`` is ``auto`` when the chat model decides."""

    layout: str
    font: str
    size: str
    tokens: int


@dataclass
class Generated:
    plan: DrawingPlan
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
            image = on_white(image).convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as err:
        raise ApiMalformed(f"image API: the returned image cannot be decoded ({err})") from None
    scale = max_side / max(image.size)
    if scale < 1:
        image = image.resize((max(1, round(image.width * scale)),
                              max(1, round(image.height * scale))), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality, subsampling=0)
    return out.getvalue(), image.size, original_format, original_size


class ImageApiRenderer(Renderer[GenerateOptions]):
    """LogicOCR-style generated images of whole items."""

    name = "generate"
    version = "1"
    config_model = GenerateConfig
    row_model = GeneratedRow
    help = """Draw each item of CORPUS (context, question and options) with an image-generation
    API, LogicOCR-style: a background scene or text beside an illustration, handwritten or
    printed.

    Every response is cached before it is used, so a re-run, a crash or --overwrite never pays
    for a response twice. The returned image is kept in originals/; the benchmark copy is a
    JPEG in images/.

    \b
    Examples:
      mmconvert generate logiqa --source LogiQA-dataset --dedup --dry-run
      mmconvert generate logiqa --source LogiQA-dataset --layout tokens:250 --budget 20
      mmconvert generate logiqa2 --chat-base-url http://localhost:8000/v1 \\
          --chat-model Qwen/Qwen2.5-14B-Instruct
    """
    options_model = GenerateOptions
    # a natural image: Tesseract finds the text blocks itself (page segmentation 3)
    profile = Profile(roles=("generated",), checks=frozenset({"ocr", "options", "image"}),
                      ocr_psm=3, ocr_edge_words=True)
    paid = True

    @classmethod
    def job(cls, config: GenerateConfig, api: ApiOptions | None = None, *,
            dry_run: bool = False) -> GenerateJob:
        return GenerateJob(config, api, dry_run=dry_run)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ImageApiRenderer:
        """Without an API client: what it can do is plan and estimate; a row's image comes
        back from the response cache with one (``GenerateJob``)."""
        return cls(cls.options_from(params), Prompts(None), None)

    def sample(self, item: Item, seed: int) -> dict[str, Any]:
        plan = self.plan(item, seed)
        return {"layout": plan.layout, "font": plan.font, "size": plan.size,
                "tokens": plan.tokens}

    @classmethod
    def expected_text(cls, row: Row) -> str:
        assert isinstance(row, GeneratedRow)
        return row.text_in_image

    def __init__(self, options: GenerateOptions, prompts: Prompts, api: ApiClient | None):
        self.options = options
        self.prompts = prompts
        self.api = api

    @property
    def client(self) -> ApiClient:
        """The API client (a renderer made from a row's params, to read it, has none)."""
        if self.api is None:
            raise UsageError("the generate renderer was made without an API client")
        return self.api

    # --- sampling (no calls) -------------------------------------------------------------

    def plan(self, item: Item, seed: int) -> DrawingPlan:
        options = self.options
        tokens = count_tokens(image_text(item))
        font: str = options.font
        if font == "random":
            font = rng(seed, "generate-font", item.id).choice(FONTS)
        layout = options.layout
        if layout.startswith("tokens:"):
            layout = "background" if tokens > int(layout.partition(":")[2]) else "interleaved"
        size: str = options.size
        if size == "auto":
            size = WIDE if tokens > options.long_tokens else TALL
        return DrawingPlan(layout, font, size, tokens)

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
        return self.client.prices.chat_estimate(self.options.chat_model, prompt,
                                             self.options.chat_max_tokens)

    def image_estimate(self, prompt: str, size: str) -> Cost:
        quality = "high" if self.options.quality == "auto" else self.options.quality
        return self.client.prices.image_estimate(self.options.image_model, quality, size, prompt)

    # --- calls ---------------------------------------------------------------------------

    def _chat(self, purpose: str, item: Item, seed: int, values, keys, parse, calls):
        prompt = self.chat_prompt(purpose, values, keys)
        result = self.client.chat(self.chat_params(prompt), item_id=item.id, seed=seed,
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
        result = self.client.image(params, item_id=item.id, seed=seed,
                                estimate=self.image_estimate(prompt, plan.size))
        calls["image"] = {**result.provenance(), "size": plan.size,
                          "quality": self.options.quality}
        original = result.data["image"]
        jpeg, size, fmt, original_size = benchmark_copy(original, self.options.max_side,
                                                        self.options.jpeg_quality)
        return Generated(plan, layout, template, prompt, depiction, original, fmt,
                         original_size, jpeg, size, calls)


class GenerateJob(Job):
    """``mmconvert generate``: each whole item drawn by an image-generation API (LogicOCR).

    Runs in threads (``threads`` requests in flight), since it waits on the network; the API
    client, its response cache and the budget are shared by them.
    """

    config: GenerateConfig
    api_options: ApiOptions

    def __init__(self, config: GenerateConfig, api: ApiOptions | None = None, *,
                 dry_run: bool = False):
        from ..api.client import ApiClient

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
                raise UsageError(needs("generate", "the openai client", "generate")) from None
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
            **question_fields(item, config.prompt_style, prompt, text_prompt),
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
        requests: Counter[str] = Counter()
        cached, unpriced = 0, set()
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

    def report(self, rows) -> dict[str, Any]:
        """Spend and usage per item and in total over the run folder's manifest (``rows()``),
        and what this invocation asked and paid."""
        per_item: dict[str, float | None] = {}
        usage: Counter[str] = Counter()
        for row in rows():
            provenance = row.provenance or {}
            per_item[row.id] = provenance.get("cost_usd")
            for purpose, call in (provenance.get("calls") or {}).items():
                for name, value in (call.get("usage") or {}).items():
                    if isinstance(value, int):
                        usage[f"{purpose}_{name}"] += value
        priced = [v for v in per_item.values() if v is not None]
        return {"spend": {"total_usd": round(sum(priced), 6),
                          "items_unpriced": len(per_item) - len(priced),
                          "usage": dict(sorted(usage.items())), "per_item_usd": per_item},
                "api": {"options": self.api_options.record(), "this_run": self.api.report()}}
