"""``mmconvert list``: the registered parts, the page styles and the shipped recipes."""

from __future__ import annotations

import click

from .corpora import CORPORA
from .errors import UsageError
from .exporters import EXPORTERS
from .parts import EXECUTORS, RENDERERS, TRANSFORMS
from .recipes import load_recipe, shipped
from .registry import BUILT_IN
from .renderers.fonts import PAGE_FONTS
from .renderers.style_files import describe_preset, presets

KINDS = ["corpora", "renderers", "transforms", "exporters", "executors", "styles", "recipes"]


def list_parts(kind):
    """List the registered corpora, renderers, transforms, exporters and executors, with the
    package that provides each plugin (entry points: mmconvert.corpora, .renderers,
    .transforms, .exporters; see docs/plugins.md), the page styles render --style takes, and
    the shipped recipes."""
    def first(part) -> str:
        return ((part.__doc__ or "").strip().splitlines() or [""])[0]

    def parts(registry, describe):
        """Each part's line; a plugin that cannot be loaded is its one line, the rest go on."""
        for name in registry.names():
            package = registry.provider(name)
            origin = "" if package == BUILT_IN else f"  [from {package}]"
            try:
                line = describe(name, registry.get(name))
            except UsageError as err:
                line = f"  {name:<14} cannot be used: {err}"
            click.echo(line + origin)
        for line in registry.broken:
            click.echo(f"  ! {line}")

    if kind in (None, "corpora"):
        click.echo("corpora:")
        parts(CORPORA, lambda name, cls: f"  {name:<14} {cls.hub_id or '':<34} "
                                         f"{cls.description}")
        click.echo(f"  {'PATH':<14} {'(a local .jsonl/.csv/.parquet)':<34} generic item schema")
    if kind in (None, "renderers"):
        click.echo("renderers:")
        parts(RENDERERS, lambda name, cls: f"  {name:<14} v{cls.version:<5} {first(cls)}")
    if kind in (None, "transforms"):
        click.echo("transforms (--apply NAME:VALUE, sweep --vary NAME:V1,V2):")
        parts(TRANSFORMS, lambda name, cls: f"  {name:<14} {cls.primary + ' ' + cls.example:<18} "
                                            f"{cls.description}")
    if kind in (None, "exporters"):
        click.echo("exporters (export --format NAME):")
        parts(EXPORTERS, lambda name, fn: f"  {name:<14} {first(fn)}")
    if kind in (None, "executors"):
        click.echo("executors:")
        parts(EXECUTORS, lambda name, cls: f"  {name:<14} {cls.description}")
    if kind in (None, "styles"):
        click.echo("styles (render --style NAME, or a style file):")
        for name, path in presets().items():
            click.echo(f"  {name:<14} {describe_preset(path)}")
        click.echo(f"  faces for --font and a style's font: {', '.join(PAGE_FONTS)}, or any "
                   "TTF/OTF/TTC file")
    if kind in (None, "recipes"):
        click.echo("recipes (render --recipe NAME, harness --recipe NAME, or a recipe file):")
        for name in shipped():
            found = load_recipe(name)
            line = " ".join(found.description.split())
            click.echo(f"  {name:<20} {line[:150]}")


def list_command() -> click.Command:
    """``list`` (``cli.LAZY``)."""
    return click.Command("list", callback=list_parts, help=list_parts.__doc__,
                         params=[click.Argument(["kind"], type=click.Choice(KINDS),
                                                required=False)])
