"""``mmconvert recipe``: verify, make, show."""

from __future__ import annotations

from pathlib import Path

import click

from ..command_base import OneLineError, one_line, reports_errors
from ..errors import MMConvertError, UsageError
from ..manifest import atomic_write
from . import dump, load_recipe
from .fingerprints import make_recipe, verify


@click.group()
def recipe():
    """Recipes: everything that decides an item's pixels, with a fingerprint another lab can
    check (mmconvert list recipes names the shipped ones; render --recipe draws with one)."""


@recipe.command("verify")
@click.argument("names", nargs=-1, required=True, metavar="NAME|FILE...")
@click.option("--allow-paid", is_flag=True,
              help="Draw the reference items of a recipe whose renderer calls a paid API "
                   "(generate) there; without it such a recipe is not verified, and nothing "
                   "is sent.")
@reports_errors
def verify_command(names, allow_paid):
    """Draw each recipe's reference items on this machine: "identical", or what differs and
    why (Chromium, PyMuPDF, a font, mmconvert itself). Exits 1 when any differs.

    \b
    Examples:
      mmconvert recipe verify readbench glyph
      mmconvert recipe verify my-recipe.yaml
    """
    differ = failed = 0
    for name in names:
        try:
            found = load_recipe(name)
            verdict = verify(found, allow_paid=allow_paid)
        except MMConvertError as err:  # a bad file, a tokenizer not here: said, and on
            failed += 1
            reason = str(err).removeprefix(f"recipe {name}: ").removeprefix(
                f"recipe {Path(str(name)).resolve()}: ")
            click.echo(f"{one_line(str(name))}: not verified: {one_line(reason)}")
            continue
        shown = one_line(found.name)
        pages = sum(len(ref.pages) for ref in found.references)
        if verdict.identical:
            click.echo(f"{shown}: identical ({len(found.references)} reference item(s), "
                       f"{pages} page(s))")
            for line in verdict.lines:
                click.echo(f"  {one_line(line)}")
            continue
        differ += 1
        click.echo(f"{shown}: differs")
        for line in verdict.lines:
            click.echo(f"  {one_line(line)}")
    if differ or failed:
        said = [f"{differ} of {len(names)} recipe(s) draw otherwise here"] if differ else []
        said += [f"{failed} of {len(names)} could not be verified"] if failed else []
        kind = UsageError if failed else MMConvertError  # exit 2 when one could not be read
        raise OneLineError(kind("; ".join(said)))


@recipe.command("make")
@click.argument("spec", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--out", "-o", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The recipe file to write.")
@reports_errors
def make_command(spec, out):
    """Fill in SPEC's fingerprint: what this machine draws its reference items with (versions,
    fonts) and their pages' hashes.

    \b
    Example:
      mmconvert recipe make my-spec.yaml --out my-recipe.yaml
    """
    made = make_recipe(load_recipe(spec))
    atomic_write(out, dump(made).encode("utf-8"))
    pages = sum(len(ref.pages) for ref in made.references)
    click.echo(f"recipe {made.name}: {len(made.references)} reference item(s), {pages} "
               f"page(s), written to {out}", err=True)


@recipe.command("show")
@click.argument("name", metavar="NAME|FILE")
@reports_errors
def show_command(name):
    """Print a recipe as its file holds it."""
    click.echo(dump(load_recipe(name)), nl=False)


def recipe_command() -> click.Group:
    return recipe
