"""The ``mmconvert`` command: a thin click layer over the library. This module is the group;
each command is built in its own module, imported when it is used (``LAZY``, and
``render_command`` for the renderers' commands), so ``mmconvert qa check`` imports no
renderer. What the commands share is ``command_base`` (click alone) and ``command_options``
(the config's models)."""

from __future__ import annotations

import functools
import importlib

import click

from ._version import __version__
from .command_base import CorpusCommand
from .parts import DEFAULT, LOCAL, RENDERERS, use


class Main(click.Group):
    """The commands: the fixed ones, ``render`` (the default renderer, or ``--renderer NAME``)
    and one per other registered renderer (``occlude``, ``generate``, a plugin's), each built
    from its renderer's models when it is used."""

    def list_commands(self, ctx):
        return sorted({*self.commands, *LAZY, "render",
                       *(n for n in RENDERERS.names() if n != DEFAULT)})

    def get_command(self, ctx, name):
        if name in self.commands:
            return self.commands[name]
        if name in LAZY:
            return lazy_command(name)
        if name == "render" or (name in RENDERERS and name != DEFAULT):
            return renderer_commands().run_command(DEFAULT if name == "render" else name, name)
        return None

    def resolve_command(self, ctx, args):
        """``render --renderer NAME ...``: the command of renderer NAME, under ``render``; a
        command that reads a corpus takes the named corpus's own flags."""
        name, command, rest = self._resolve(ctx, args)
        if isinstance(command, CorpusCommand):
            command = command.for_corpus(rest)
        return name, command, rest

    def _resolve(self, ctx, args):
        if args and args[0] == "render":
            commands = renderer_commands()
            for position, arg in enumerate(args[1:-1], start=1):
                if arg == "--renderer":
                    return "render", commands.run_command(args[position + 1], "render"), args[1:]
            for arg in args[1:]:
                if arg.startswith("--renderer="):
                    return ("render", commands.run_command(arg.split("=", 1)[1], "render"),
                            args[1:])
            named = commands.recipe_renderer(args[1:])
            if named is not None:  # a recipe's renderer, unless --renderer says otherwise
                return "render", commands.run_command(named, "render"), args[1:]
        if args and not args[0].startswith("-"):
            command = self.get_command(ctx, args[0])
            if command is None:
                import difflib

                close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1)
                ctx.fail(f"No such command {args[0]!r}" + (f"; did you mean {close[0]!r}?"
                                                           if close else "."))
            return args[0], command, args[1:]
        return super().resolve_command(ctx, args)


@click.group(cls=Main,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mmconvert")
def main():
    """Turn text benchmarks and corpora into image benchmarks for vision-language models."""
    use(LOCAL)  # each invocation starts local; --executor says otherwise


def renderer_commands():
    """The module that builds the renderers' commands (``render``, ``occlude``, ``generate``,
    a plugin's), imported when one of them is used: it imports the converter and the recipes,
    which ``mmconvert qa check`` does not need."""
    from . import render_command

    return render_command


@functools.cache
def lazy_command(name: str) -> click.Command:
    """Command ``name`` of ``LAZY``, built once a process from its package's module."""
    module, _, builder = LAZY[name].partition(":")
    return getattr(importlib.import_module(module), builder)()


# the other commands, each imported from its module when used (``Main.get_command``):
# ``mmconvert qa check`` imports no renderer
LAZY = {"list": "mmconvert.list_command:list_command",
        "dedup": "mmconvert.corpora.commands:dedup_command",
        "stats": "mmconvert.stats_command:stats_command",
        "sweep": "mmconvert.postprocess.commands:sweep_command",
        "transform": "mmconvert.postprocess.commands:transform_command",
        "eval": "mmconvert.evaluation.commands:eval_command",
        "frontier": "mmconvert.evaluation.commands:frontier_command",
        "curve": "mmconvert.evaluation.commands:curve_command",
        "qa": "mmconvert.qa.commands:qa_command",
        "export": "mmconvert.exporters.commands:export_command",
        "score": "mmconvert.scoring.commands:score_command",
        "recipe": "mmconvert.recipes.commands:recipe_command",
        "harness": "mmconvert.harness.commands:harness_command"}


if __name__ == "__main__":  # pragma: no cover
    main()
