"""Multiple-choice options: read from one column per letter, and shuffled with a seed."""

from __future__ import annotations

from dataclasses import replace

from ..items import LETTERS, Item
from ..seeds import rng
from .base import text_field


def lettered_options(data: dict, where: str, letters: str = "ABCD") -> list[str]:
    """Options held in one column per letter (``A``, ``B``…), as exam CSVs keep them."""
    return [text_field(data, letter, where) for letter in letters]


def shuffle_options(item: Item, seed: int, stage: str = "shuffle-options",
                    key: str | None = None) -> Item:
    """The item with its options in an order drawn from (run seed, item id): the same on every
    machine and run. The manifest keeps the original order and answer in metadata."""
    if not item.options or not isinstance(item.answer, str):
        return item
    order = list(range(len(item.options)))
    rng(seed, stage, key or item.id).shuffle(order)
    old = LETTERS.index(item.answer)
    metadata = {**item.metadata, "original_options": list(item.options),
                "original_answer": item.answer}
    return replace(item, options=[item.options[i] for i in order],
                   answer=LETTERS[order.index(old)], metadata=metadata)
