"""Needle-in-a-haystack sets: ``mmconvert render niah``.

Each item is a haystack of a chosen length (in tokens of ``--length-tokenizer``, or in words)
with one or more needles (key-value sentences, RULER's kinds) placed at a chosen depth, and a
question asking for the needle's value(s). The grid is ``--lengths`` × ``--depths`` ×
``--needle-samples``; every row records the length asked and reached, the depth asked and
reached, the needles and their character offsets (``metadata.niah``), and ``eval`` reports
accuracy by length × depth (``results.json``'s ``grid``, a table and a heat map).

- **Haystack**: ``--haystack FILE|CORPUS`` (repeatable: a text file, or any file or corpus
  ``render`` reads, its items' text joined), cut into sentences and taken in order, repeated
  when shorter than the longest length (the run says so); none: RULER's repeated-sentence
  noise.
- **Needles**: ``--needle`` templates with ``{key}`` and ``{value}`` (one is drawn for each
  item), or RULER's default sentence. Kinds (``--needle-kind``): ``single`` (one needle),
  ``multi-key`` (the needle and three distractors with other keys), ``multi-value`` (one key,
  four values, all asked), ``multi-query`` (four needles, two asked). Keys are drawn word pairs,
  values seven-digit numbers, all from ``--seed`` and the item's cell.
- **Depth**: the asked needle starts at the sentence boundary nearest that share of the
  haystack (0 = first sentence, 100 = after the last); the others at drawn boundaries.
- **Length**: the haystack and needles together come to the largest whole number of sentences
  within the length, counted on the assembled text; ``k`` means 1,024 (RULER's 4k is 4,096).
- **Dialogues** (``--haystack-unit turn``, MRCR's style): the haystack is the chat turns of
  ``--haystack``'s dialogues, each needle a turn of its own (``user: …``) between turns; the
  context is the turns as "role: content" paragraphs, and ``metadata.turns`` the turns, which
  ``render --renderer document`` draws as a dialogue.

Scoring is RULER's: the share of the asked values found in the answer.
"""

from __future__ import annotations

import bisect
import re
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from ..errors import SourceError, UsageError
from ..items import Item, RenderPart
from ..options import cli
from ..rows import Row
from ..seeds import rng
from ..tokens import load_tokenizer
from . import resolve
from .base import Corpus, CorpusOptions, LoadReport, LoadRequest, load_items
from .files import turn_text

NeedleKind = Literal["single", "multi-key", "multi-value", "multi-query"]
# RULER's noise haystack: the same few sentences, repeated
NOISE = ("The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
         "again. ")
NEEDLE = "One of the special magic numbers for {key} is: {value}."
NEEDLE_ROLE = "user"  # the speaker of a needle turn, in a dialogue haystack
QUESTION = {
    "one": "What is the special magic number for {keys} mentioned in the provided text?",
    "values": "What are all the special magic numbers for {keys} mentioned in the provided "
              "text?",
    "keys": "What are the special magic numbers for {keys} mentioned in the provided text?",
}
ADJECTIVES = ("amber", "brave", "calm", "dusty", "eager", "faint", "gentle", "hollow", "icy",
              "jolly", "keen", "lively", "mellow", "noble", "odd", "plain", "quiet", "rapid",
              "silent", "tidy", "upbeat", "vivid", "warm", "young", "zesty", "bold", "crisp",
              "deep", "early", "fancy", "grand", "humble")
NOUNS = ("anchor", "badger", "candle", "dolphin", "engine", "falcon", "garden", "harbor",
         "island", "jacket", "kettle", "lantern", "meadow", "needle", "orchard", "pebble",
         "quarry", "river", "saddle", "tunnel", "umbrella", "valley", "wagon", "yarn", "zephyr",
         "beacon", "cactus", "desert", "ember", "forest", "glacier", "hammer")
_SENTENCE = re.compile(r"(?<=[.!?。！？])[\"'”’)\]]*\s+|\n\s*\n")
DEPTHS = [float(d) for d in range(0, 101, 10)]


class NiahOptions(CorpusOptions):
    """``render niah``'s haystacks, needles, lengths and depths."""

    haystack: list[str] = Field(
        default_factory=list, description="the haystack's text: a text file, or a file or "
        "corpus render reads (its items' text); repeatable",
        json_schema_extra=cli("--haystack", default="RULER's repeated-sentence noise"))
    needle: list[str] = Field(
        default_factory=list, description="a needle template with {key} and {value}; "
        "repeatable (one is drawn per item)",
        json_schema_extra=cli("--needle", default=f"{NEEDLE!r}"))
    needle_kind: NeedleKind = Field("single", description="RULER's kinds: single, multi-key "
                                    "(three distractors), multi-value (four values asked), "
                                    "multi-query (two of four keys asked)")
    lengths: list[str] = Field(
        ["1k", "2k", "4k"], description="haystack lengths, in tokens of --length-tokenizer "
        "(or words): 1k = 1024", json_schema_extra=cli(split=True))
    depths: list[float] = Field(
        DEPTHS, description="needle depths, percent of the haystack (0 = its start)",
        json_schema_extra=cli(split=True, default="0,10,20,30,40,50,60,70,80,90,100"))
    length_tokenizer: str | None = Field(
        None, description="the tokenizer lengths are counted in (a tokenizer.json, a folder "
        "holding one, a hub id in the local cache, or tiktoken:NAME)",
        json_schema_extra=cli(default="words"))
    needle_samples: int = Field(1, ge=1, le=1000, description="items per length and depth")
    haystack_unit: Literal["sentence", "turn"] = Field(
        "sentence", description="what the haystack is cut into and a depth lands between: "
        "sentences, or the chat turns of a haystack of dialogues (the needle a turn of its "
        "own; render --renderer document draws them as a dialogue, MRCR's style)")

    @field_validator("lengths")
    @classmethod
    def _lengths(cls, value: list[str]) -> list[str]:
        for text in value:
            parse_length(text)
        if not value:
            raise ValueError("give at least one length")
        return value

    @field_validator("depths")
    @classmethod
    def _depths(cls, value: list[float]) -> list[float]:
        if not value or any(not 0 <= d <= 100 for d in value):
            raise ValueError("depths are percentages from 0 to 100")
        return value

    @field_validator("needle")
    @classmethod
    def _needles(cls, value: list[str]) -> list[str]:
        for template in value:
            check_template(template)
        return value


# the longest haystack (in tokens or words): RULER's 128k eight times over, about 2,000 A4
# pages; a billion asked for 4 GB before anything was drawn
MAX_LENGTH = 1024 * 1024
MAX_NEEDLE_CHARS = 1000


def parse_length(text: str) -> int:
    """``"4k"`` -> 4096, ``"1500"`` -> 1500; a ValueError naming the limits past them."""
    found = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,6})?)\s*([kKmM]?)\s*", str(text))
    if not found:
        raise ValueError(f"{str(text)[:40]!r} is not a length (e.g. 1k, 4k, 1500; at most "
                         f"{MAX_LENGTH:,})")
    scale = {"": 1, "k": 1024, "m": 1024 * 1024}[found.group(2).lower()]
    length = int(float(found.group(1)) * scale)
    if length < 16:
        raise ValueError(f"{text!r}: a haystack of at least 16 tokens")
    if length > MAX_LENGTH:
        raise ValueError(f"{text!r}: {length:,} is over the longest haystack, {MAX_LENGTH:,} "
                         "(1m)")
    return length


# the most of a haystack text file read: far more than the longest haystack needs
MAX_HAYSTACK_BYTES = 64 << 20


def haystack_text(path: Path) -> str:
    """A haystack text file's text, its first ``MAX_HAYSTACK_BYTES`` at most."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_HAYSTACK_BYTES)
    except OSError as err:
        raise SourceError(f"{path}: cannot read ({err.strerror})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if err.start >= len(raw) - 3 and len(raw) == MAX_HAYSTACK_BYTES:  # cut in a character
            return raw[:err.start].decode("utf-8-sig")
        raise SourceError(f"--haystack {path}: not UTF-8 text (byte 0x{raw[err.start]:02X} at "
                          f"offset {err.start}); save it as UTF-8") from None


def check_template(template: str) -> str:
    """A needle template: text with ``{key}`` and ``{value}`` once each at least, and no
    other field, conversion or format (``{value:>1500000000}`` would be 1.5 GB of spaces);
    ``{{`` and ``}}`` are braces. A ValueError saying what is wrong otherwise."""
    import string

    if len(template) > MAX_NEEDLE_CHARS:
        raise ValueError(f"a needle template of {len(template):,} characters; at most "
                         f"{MAX_NEEDLE_CHARS:,}")
    shown = template if len(template) <= 60 else template[:57] + "..."
    try:
        fields = [(name, spec, conversion)
                  for _, name, spec, conversion in string.Formatter().parse(template)
                  if name is not None]
    except ValueError as err:  # a lone { or }
        raise ValueError(f"{shown!r}: {err} (write a brace as {{{{ or }}}})") from None
    for name, spec, conversion in fields:
        if name not in ("key", "value") or spec or conversion:
            field = "{" + name + (f"!{conversion}" if conversion else "") + \
                (f":{spec}" if spec else "") + "}"
            raise ValueError(f"{shown!r}: {field[:40]} is not {{key}} or {{value}} (a needle "
                             "template takes those two, plain)")
    if {"key", "value"} - {name for name, _, _ in fields}:
        raise ValueError(f"{shown!r}: a needle template needs {{key}} and {{value}}")
    return template


class Counter:
    """Lengths in tokens of a tokenizer, or in words."""

    def __init__(self, spec: str | None):
        self.tokenizer = None
        if spec:
            self.tokenizer = load_tokenizer(spec, "--length-tokenizer")
        self.unit = "tokens" if spec else "words"

    def __call__(self, text: str) -> int:
        return self.tokenizer.count(text) if self.tokenizer else len(text.split())

    def record(self) -> dict[str, Any]:
        return {"unit": self.unit, **({"tokenizer": self.tokenizer.record()}
                                      if self.tokenizer else {})}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


class Niah(Corpus[NiahOptions]):
    name = "niah"
    description = "needle-in-a-haystack sets: --haystack, --needle, --lengths, --depths"
    options_model = NiahOptions
    render_part = "context"
    default_split = "test"

    def part_for(self, item: Item) -> RenderPart:
        return "context"

    def load(self, request: LoadRequest, report: LoadReport) -> list[Item]:
        options = self.options_of(request)
        counter = Counter(options.length_tokenizer)
        if options.haystack_unit == "turn":
            turns, sources = self.turns(options, request)
            pieces = [turn_text(t) for t in turns]
        else:
            text, sources = self.haystack(options, request)
            pieces, turns = sentences(text), None
        if not pieces:
            raise SourceError("the haystack has no text")
        counts = [counter(p) for p in pieces]
        longest = max(parse_length(x) for x in options.lengths)
        total = sum(counts)
        repeats = -(-longest * 11 // 10 // max(1, total))  # to 110 % of the longest, at least 1
        if repeats > 1 and options.haystack:  # the noise is repeated by design
            report.notes.append(f"niah: the haystack ({total} {counter.unit}) is shorter than "
                                f"the longest length ({longest}); it is repeated {repeats} "
                                "times")
        pieces = pieces * repeats
        turns = turns * repeats if turns else None
        ends = list(accumulate(counts * repeats))  # the haystack's length to each sentence's end
        needles = options.needle or [NEEDLE]
        items = []
        for label in options.lengths:
            length = parse_length(label)
            for depth in options.depths:
                for sample in range(options.needle_samples):
                    items.append(self.item(pieces, ends, counter, length, label, depth, sample,
                                           needles, options.needle_kind, request.seed,
                                           sources, repeats, turns, options.depths))
                    report.rows += 1
        return items

    def haystack(self, options: NiahOptions, request: LoadRequest) -> tuple[str, list[str]]:
        if not options.haystack:
            return NOISE * 64, ["ruler-noise"]
        parts = []
        for name in options.haystack:
            path = Path(name)
            if path.exists() and not path.is_file() and not path.is_dir():
                raise UsageError(f"--haystack {name}: not a regular file (a text file, or a "
                                 "file or corpus render reads)")
            if not path.exists() and (path.suffix or "/" in name):  # a file, not a corpus
                raise UsageError(f"--haystack {name}: " + (
                    "a symbolic link that leads nowhere, or back to itself"
                    if path.is_symlink() else "no such file"))
            if path.suffix.lower() in (".txt", ".md") and path.is_file():
                parts.append(haystack_text(path))
                continue

            if name == self.name:
                raise UsageError("--haystack niah: a haystack cannot be another haystack set")
            corpus = resolve(name)
            inner = LoadRequest(source=request.source, on_error=request.on_error,
                                seed=request.seed)
            for item in load_items(corpus, inner, LoadReport()):
                parts.append("\n\n".join(t for t in (item.context, item.question) if t))
        return "\n\n".join(parts), list(options.haystack)

    def turns(self, options: NiahOptions, request: LoadRequest) -> tuple[list[dict], list[str]]:
        """The chat turns of the haystack's dialogues (items whose context is a list of
        turns, ``metadata.turns``); one line when it holds none."""
        found: list[dict[str, str]] = []
        text = any(Path(n).suffix.lower() in (".txt", ".md") for n in options.haystack)
        for name in [] if text else options.haystack:  # text has no turns
            if name == self.name:
                raise UsageError("--haystack niah: a haystack cannot be another haystack set")
            inner = LoadRequest(source=request.source, on_error=request.on_error,
                                seed=request.seed)
            for item in resolve(name).load(inner, LoadReport()):
                found.extend((item.metadata or {}).get("turns") or [])
        if not found:
            raise UsageError("--haystack-unit turn needs --haystack dialogues: a file or corpus "
                             "whose items' context is a list of chat turns ([{\"role\", "
                             "\"content\"}])")
        return [{"role": t["role"], "content": t["content"]} for t in found], \
            list(options.haystack)

    def item(self, pieces: list[str], ends: list[int], counter: Counter, length: int,
             label: str, depth: float, sample: int, needles: list[str], kind: NeedleKind,
             seed: int, sources: list[str], repeats: int,
             turns: list[dict[str, str]] | None = None,
             depths: list[float] | None = None) -> Item:
        cell = f"{label}-{depth:g}-{sample}"
        draw = rng(seed, "niah", cell)
        template = draw.choice(needles)
        keys = self._keys(draw, 4 if kind in ("multi-key", "multi-query") else 1)
        if kind == "multi-value":
            placed = [(keys[0], self._value(draw)) for _ in range(4)]
            asked = [0, 1, 2, 3]
        else:
            placed = [(key, self._value(draw)) for key in keys]
            asked = [0, 1] if kind == "multi-query" else [0]
        texts = [template.format(key=k, value=v) for k, v in placed]
        if turns is not None:  # each needle a turn of its own
            needle_turns = [{"role": NEEDLE_ROLE, "content": t} for t in texts]
            texts = [turn_text(t) for t in needle_turns]
        separator = "\n\n" if turns is not None else " "
        needed = sum(counter(t) for t in texts)
        if needed >= length:
            raise UsageError(f"niah: the needles ({needed} {counter.unit}) do not fit in a "
                             f"haystack of {length}")
        # the haystack's sentences, fewest to drop until the whole text fits the length
        taken = max(1, bisect.bisect_right(ends, length - needed))
        while True:
            hay = pieces[:taken]
            at = boundary_at(ends[:taken], depth)
            spots = [at] + [draw.randint(0, len(hay)) for _ in texts[1:]]
            context, offsets = _assemble(hay, texts, spots, separator)
            reached = counter(context)
            if reached <= length or taken == 1:
                break
            taken -= 1
        first = offsets[0]
        before = counter(context[:first]) if first else 0
        question = QUESTION["values" if kind == "multi-value" else
                            "keys" if len(asked) > 1 else "one"].format(
            keys=" and ".join(dict.fromkeys(placed[i][0] for i in asked)))
        answer = [placed[i][1] for i in asked]
        reached_depth = round(100 * before / reached, 3) if reached else 0.0
        off = abs(reached_depth - depth) > DEPTH_TOLERANCE
        metadata: dict[str, Any] = {"niah": {
            "length": label, "length_target": length, "length_reached": reached,
            **counter.record(), "depth": depth, "depth_reached": reached_depth,
            "tokens_before_needle": before,
            **({"depth_off": True} if off else {}),
            "kind": kind, "sample": sample, "template": template,
            "needles": [{"key": k, "value": v, "text": t, "offset": o, "asked": i in asked}
                        for i, ((k, v), t, o) in enumerate(zip(placed, texts, offsets,
                                                                strict=True))],
            "haystack": sources, "haystack_repeats": repeats, "sentences": len(hay)},
            # eval's two-way breakdown (results.json's grid, a table and heat maps), by the
            # depth reached, in the bin of the asked depth nearest to it
            "grid": {"length": label, "depth": nearest(reached_depth, depths)},
            **({"grid_flag": f"the needle is at {reached_depth:g} % of the tokens, asked "
                             f"{depth:g} %"} if off else {})}
        if turns is not None:  # the dialogue the document renderer draws, needles in place
            metadata["niah"]["haystack_unit"] = "turn"
            metadata["turns"] = [turn for turn, _ in _interleave(turns[:len(hay)],
                                                                 needle_turns, spots)]
        subset = f"niah-{label}"
        return Item(id=f"{subset}-d{depth:g}-{sample:03d}".replace(".", "_"), corpus=self.name,
                    subset=subset, split="test", context=context, question=question,
                    answer=answer, metadata=metadata, origin=f"niah {cell}")

    @staticmethod
    def _keys(draw, count: int) -> list[str]:
        keys: list[str] = []
        while len(keys) < count:
            key = f"{draw.choice(ADJECTIVES)}-{draw.choice(NOUNS)}"
            if key not in keys:
                keys.append(key)
        return keys

    @staticmethod
    def _value(draw) -> str:
        return str(draw.randint(1_000_000, 9_999_999))

    def scoring(self, row: Row) -> dict[str, Any]:
        """RULER's string_match_all: the share of the asked values the answer holds."""
        return {"kind": "free", "metric": "ruler:string_match_all"}


# a needle further than this from its asked depth (points) is flagged (``depth_off``)
DEPTH_TOLERANCE = 5.0


def boundary_at(ends: list[int], depth: float) -> int:
    """The piece boundary (0: before the first, ``len(ends)``: after the last) whose share
    of the haystack's tokens (or words) before it is nearest ``depth`` percent: ``ends[i]`` is
    the count to the end of piece i. The first of two as near."""
    total = ends[-1] if ends else 0
    goal = depth / 100 * total
    before = [0, *ends]
    return min(range(len(before)), key=lambda i: (abs(before[i] - goal), i))


def nearest(value: float, grid: list[float] | None) -> float:
    """The value of ``grid`` nearest ``value`` (the lower of two as near); ``value`` itself
    when there is no grid."""
    if not grid:
        return value
    return min(grid, key=lambda g: (abs(g - value), g))


def _interleave(hay: list, needles: list, spots: list[int]):
    """The haystack's pieces with needle ``i`` before piece ``spots[i]`` (after the last for
    ``len(hay)``): each piece or needle in order, with the needle's index (None for a
    piece)."""
    at: dict[int, list[int]] = {}
    for index, spot in enumerate(spots):
        at.setdefault(spot, []).append(index)
    for i in range(len(hay) + 1):
        for index in at.get(i, []):
            yield needles[index], index
        if i < len(hay):
            yield hay[i], None


def _assemble(hay: list[str], needles: list[str], spots: list[int],
              separator: str = " ") -> tuple[str, list[int]]:
    """The haystack's pieces with each needle before piece ``spots[i]`` (after the last for
    ``len(hay)``), joined by ``separator``; and each needle's character offset."""
    parts: list[str] = []
    offsets = [0] * len(needles)
    position = 0
    for part, index in _interleave(hay, needles, spots):
        if index is not None:
            offsets[index] = position
        parts.append(part)
        position += len(part) + len(separator)
    return separator.join(parts), offsets
