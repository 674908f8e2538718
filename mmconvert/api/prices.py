"""What API calls cost: a dated price table (shipped, or ``--price-table FILE``), estimates made
before a request, costs from the usage a response reports, and the ``--budget`` guard."""

from __future__ import annotations

import functools
import json
import math
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import BudgetReached, UsageError
from ..vision_tokens import openai_patches, openai_tiles

MILLION = 1_000_000


def estimate_tokens(text: str) -> int:
    """A deliberately high token estimate for a prompt: one token per 3 UTF-8 bytes (CJK text
    comes out at about one per character)."""
    return math.ceil(len(text.encode("utf-8")) / 3)


@dataclass(frozen=True)
class Cost:
    usd: float | None  # None: the model has no price in the table
    source: str  # "usage" (reported by the API), "table" (published per-image price), "none"

    def as_dict(self) -> dict[str, Any]:
        return {"usd": None if self.usd is None else round(self.usd, 6), "source": self.source}


class PriceTable:
    """Prices per model: ``per_million_tokens`` for usage, ``per_image[quality][size]`` for
    image estimates. A user's table replaces the shipped entry of each model it names."""

    def __init__(self, data: dict[str, Any], origin: str):
        self.origin = origin
        self.as_of = data.get("as_of")
        self.models: dict[str, dict[str, Any]] = data.get("models") or {}

    @classmethod
    def load(cls, path: Path | None = None) -> PriceTable:
        shipped = json.loads(resources.files(__package__).joinpath("prices.json").read_text())
        if path is None:
            return cls(shipped, "shipped")
        try:
            user = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as err:
            raise UsageError(f"--price-table {path}: cannot read ({err.strerror})") from None
        except json.JSONDecodeError as err:
            raise UsageError(f"--price-table {path}: not valid JSON ({err.msg}, line "
                             f"{err.lineno})") from None
        models = user.get("models") if isinstance(user, dict) else None
        if not isinstance(models, dict):
            raise UsageError(f"--price-table {path}: expected {{\"models\": {{<name>: {{...}}}}}}")
        for name, entry in models.items():
            tokens = entry.get("per_million_tokens") if isinstance(entry, dict) else None
            if not isinstance(tokens, dict) or not all(
                    isinstance(v, (int, float)) and v >= 0 for v in tokens.values()):
                raise UsageError(f"--price-table {path}: models.{name}.per_million_tokens: "
                                 "expected a mapping of names to prices >= 0")
            for key, fields in (("image_tiles", ("base", "tile")),
                                ("image_patches", ("multiplier",))):
                rule = entry.get(key)
                if rule is not None and not (isinstance(rule, dict) and all(
                        isinstance(rule.get(f), (int, float)) and rule[f] > 0 for f in fields)):
                    raise UsageError(f"--price-table {path}: models.{name}.{key}: expected "
                                     + ", ".join(f"{f!r}" for f in fields) + " > 0")
        merged = {**shipped, "models": {**shipped["models"], **models},
                  "as_of": user.get("as_of", shipped["as_of"])}
        return cls(merged, str(path))

    def has(self, model: str) -> bool:
        return model in self.models

    def image_rule(self, model: str):
        """How a chat model bills an image, as a function of its width and height: OpenAI's
        tile rule with the model's ``image_tiles`` (base and tile tokens), or its patch rule
        with its ``image_patches`` multiplier (the billed tokens rounded up); None when the
        table gives the model no image rule."""
        entry = self.models.get(model) or {}
        if entry.get("image_tiles"):
            tiles = entry["image_tiles"]
            return functools.partial(openai_tiles, base=tiles["base"], tile=tiles["tile"])
        if entry.get("image_patches"):
            multiplier = entry["image_patches"]["multiplier"]
            # rounded first, so that 100 x 1.62 is 162, not a float a hair over it
            return lambda width, height: math.ceil(round(openai_patches(width, height)
                                                         * multiplier, 6))
        return None

    def _tokens(self, model: str) -> dict[str, float] | None:
        entry = self.models.get(model)
        return entry.get("per_million_tokens") if entry else None

    def image_estimate(self, model: str, quality: str, size: str, prompt: str) -> Cost:
        entry = self.models.get(model)
        if entry is None:
            return Cost(None, "none")
        per_image = (entry.get("per_image") or {}).get(quality, {}).get(size)
        tokens = entry.get("per_million_tokens") or {}
        text = estimate_tokens(prompt) * tokens.get("text_input", 0.0) / MILLION
        if per_image is None:
            return Cost(None, "none")
        return Cost(per_image + text, "table")

    def image_cost(self, model: str, usage: dict[str, Any] | None, estimate: Cost) -> Cost:
        """From the usage the API reported (it wins), else the estimate."""
        prices = self._tokens(model)
        if prices is None or not usage or "output_tokens" not in usage:
            return estimate
        details = usage.get("input_tokens_details") or {}
        text = details["text_tokens"] if "text_tokens" in details else usage.get("input_tokens", 0)
        usd = (text * prices.get("text_input", 0.0)
               + details.get("image_tokens", 0) * prices.get("image_input", 0.0)
               + usage["output_tokens"] * prices.get("output", 0.0)) / MILLION
        return Cost(usd, "usage")

    def chat_estimate(self, model: str, prompt: str, max_tokens: int) -> Cost:
        prices = self._tokens(model)
        if prices is None:
            return Cost(None, "none")
        usd = (estimate_tokens(prompt) * prices.get("input", 0.0)
               + max_tokens * prices.get("output", 0.0)) / MILLION
        return Cost(usd, "table")

    def chat_cost(self, model: str, usage: dict[str, Any] | None, estimate: Cost) -> Cost:
        prices = self._tokens(model)
        if prices is None or not usage or "prompt_tokens" not in usage:
            return estimate
        usd = (usage["prompt_tokens"] * prices.get("input", 0.0)
               + usage.get("completion_tokens", 0) * prices.get("output", 0.0)) / MILLION
        return Cost(usd, "usage")


@dataclass
class Budget:
    """Money this invocation may spend. A request reserves its estimate first and settles at
    its real cost; once one request is refused, every later one is too, so a stopped run
    stops."""

    limit: float | None
    spent: float = 0.0
    reserved: float = 0.0
    stopped: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve(self, estimate: Cost) -> float:
        amount = estimate.usd or 0.0
        with self._lock:
            if self.limit is not None and (
                    self.stopped or self.spent + self.reserved + amount > self.limit + 1e-12):
                self.stopped = True
                raise BudgetReached(
                    f"budget ${self.limit:.2f} reached (${self.spent:.4f} spent); the next "
                    f"request would cost about ${amount:.4f}")
            self.reserved += amount
        return amount

    def settle(self, reserved: float, cost: Cost | None) -> None:
        """``cost`` None: the request failed and cost nothing."""
        with self._lock:
            self.reserved -= reserved
            if cost is not None:
                self.spent += cost.usd or 0.0
