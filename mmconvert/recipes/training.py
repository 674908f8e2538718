"""Rendering for training loaders: a recipe's pages made as a batch or an item is read.

``recipe.transform()`` is a function for ``datasets.Dataset.with_transform`` (or ``set_transform``):
each row of a batch becomes an item in the generic schema (``fields`` maps an item field to the
dataset's column) and gains a column of its pages as Pillow images. ``TrainingDataset(rows,
recipe)`` is a map-style dataset (``__len__`` and ``__getitem__``, what PyTorch's ``DataLoader``
reads) over any sequence of row dicts.

Seeded per item: a style's draws (a font, a size) are taken from the seed and the item's id, and
a row without an id is named by its content (``items.content_id``, the rule of every path), so
an item's pages do not depend on the batch it comes in, the order a loader shuffles it into, or
the worker that reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from . import Drawer, Recipe, load_recipe

if TYPE_CHECKING:
    from PIL import Image

    from . import Drawer, Recipe

ITEM_FIELDS = ("id", "context", "question", "options", "answer", "subset", "split", "language")


class ItemTransform:
    """``batch`` (a column -> values mapping, as ``datasets`` passes it) with ``column`` added:
    each row's pages as a list of Pillow images. The renderer is opened on first use, in the
    process that reads (a loader's worker), and kept."""

    def __init__(self, recipe: Recipe, *, seed: int = 0, column: str = "images",
                 fields: Mapping[str, str] | None = None):
        unknown = sorted(set(fields or {}) - set(ITEM_FIELDS))
        if unknown:
            raise UsageError(f"fields: {', '.join(unknown)} is not an item field (they are "
                             f"{', '.join(ITEM_FIELDS)})")
        self.recipe, self.seed, self.column = recipe, seed, column
        self.fields = {name: name for name in ITEM_FIELDS} | dict(fields or {})
        self._drawer: Drawer | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_drawer": None}  # a loader's worker opens its own

    @property
    def drawer(self) -> Drawer:
        if self._drawer is None:
            self._drawer = Drawer(self.recipe, seed=self.seed)
        return self._drawer

    def item(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The item a dataset row is: its fields taken from their columns; one without an id
        is named by its content when it is read (``items.content_id``), as on every path."""
        item = {name: row[column] for name, column in self.fields.items()
                if column in row and row[column] is not None}
        if "id" in item:
            item["id"] = str(item["id"])
        return item

    def pages(self, row: Mapping[str, Any]) -> list[Image.Image]:
        return self.drawer.render(self.item(row))

    def __call__(self, batch: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
        if not isinstance(batch, Mapping):
            raise UsageError(f"a batch is a mapping of column names to lists of values (as "
                             f"datasets passes it), not a {type(batch).__name__}")
        columns = list(batch)
        sizes = {name: len(values) if isinstance(values, Sequence) and
                 not isinstance(values, str) else None for name, values in batch.items()}
        if None in sizes.values() or len(set(sizes.values())) > 1:
            shown = ", ".join(f"{name}: {size if size is not None else 'not a list'}"
                              for name, size in sizes.items())
            raise UsageError(f"a batch's columns are lists of one length ({shown})")
        size = len(batch[columns[0]]) if columns else 0
        out = {name: list(values) for name, values in batch.items()}
        out[self.column] = [self.pages({name: batch[name][i] for name in columns})
                            for i in range(size)]
        return out


class TrainingDataset:
    """``rows`` (a sequence of dicts: a list, a ``datasets.Dataset``) with each row's pages
    drawn as it is read: ``dataset[i]`` is the row with ``column`` added. A map-style dataset
    for PyTorch's ``DataLoader``, whose workers each open their own renderer."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], recipe: Recipe | str, *,
                 seed: int = 0, column: str = "images", fields: Mapping[str, str] | None = None):
        self.rows = rows
        self.transform = ItemTransform(recipe if isinstance(recipe, Recipe)
                                       else load_recipe(recipe),
                                       seed=seed, column=column, fields=fields)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        row = dict(self.rows[index])
        row[self.transform.column] = self.transform.pages(row)
        return row
