"""mmconvert: turn text benchmarks into image benchmarks for vision-language models."""

from __future__ import annotations

from ._version import __version__


def convert(config=None, **kwargs):
    """Render a corpus into a run folder, as ``mmconvert render`` does; see
    :func:`mmconvert.converter.convert`.

    ``config`` is a dict of the run's fields (``corpus``, a name or a file, and any option of
    its renderer's config, e.g. ``{"corpus": "items.jsonl", "page": {"ppi": 150}}``) or a
    renderer's config model (:class:`mmconvert.renderers.page.RenderConfig`); keyword
    arguments: ``items`` (a list of item dicts to render instead of a corpus), ``recipe`` (a
    recipe's name or file the config goes over), ``out`` (required), ``workers``,
    ``overwrite``, ``progress``.
    """
    from .converter import convert as _convert

    return _convert(config, **kwargs)


def load_recipe(name):
    """A recipe (a shipped one's name, or a recipe file): ``load_recipe("readbench")
    .render({"question": ..., "options": [...]})`` gives the item's pages as Pillow images,
    the pixels ``mmconvert render --recipe`` writes."""
    from .recipes import load_recipe as _load

    return _load(name)


__all__ = ["__version__", "convert", "load_recipe"]
