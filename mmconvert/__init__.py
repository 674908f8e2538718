"""mmconvert: turn text benchmarks into image benchmarks for vision-language models."""

from __future__ import annotations

from ._version import __version__


def convert(config, **kwargs):
    """Render a corpus into a run folder, as ``mmconvert render`` does.

    ``config`` is a :class:`mmconvert.config.RenderConfig` or a dict of its fields;
    keyword arguments: ``out`` (required), ``workers``, ``overwrite``, ``progress``.
    """
    from .converter import convert as _convert

    return _convert(config, **kwargs)


__all__ = ["__version__", "convert"]
