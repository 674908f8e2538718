"""The CLI's flags and the option models must not drift apart: every flag that fills a model
field names it, and every default a flag's help states is the model's own default."""

from __future__ import annotations

import re

import click
import pytest

from mmconvert.cli import DEDUP_FLAGS, main
from mmconvert.config import ApiOptions, GenerateConfig, OccludeConfig, RenderConfig
from mmconvert.corpora.dedup import DedupOptions
from mmconvert.evaluation.run import EvalOptions
from mmconvert.postprocess.sweep import SweepOptions
from mmconvert.renderers.generate import GenerateOptions
from mmconvert.renderers.occlude import OccludeOptions
from mmconvert.renderers.page import PageOptions

# flag name (click's) -> (model, field), per command; the rest of a command's flags are the
# selection's (Selection fields of the same name) or DEDUP_FLAGS
RENAMED = {"render_part": (PageOptions, "render")}
MODELS = {
    "render": (RenderConfig, PageOptions),
    "occlude": (OccludeConfig, OccludeOptions),
    "generate": (GenerateConfig, GenerateOptions, ApiOptions),
    "sweep": (RenderConfig, PageOptions, SweepOptions),
    "dedup": (RenderConfig,),
    "eval": (EvalOptions,),
}
# flags that fill no model field: where the run goes and how (its executor too), the CLI's own
# switches, and the sweep's comma-separated axes (parsed into SweepOptions lists)
NOT_FIELDS = {"out", "workers", "overwrite", "progress", "executor", "ray_address", "config_file",
              "subsets", "dedup", "no_ner", "dry_run", "ppis", "scales", "rotations",
              "qualities", "varied", "targets", "as_json"}
# defaults the help states that the model leaves as None and the code resolves (the renderer's
# documented behaviour), and stated defaults that are not a field's
RESOLVED = {("occlude", "difficulty"), ("occlude", "width"), ("occlude", "font"),
            ("generate", "chat_api_key_env"), ("generate", "image_base_url"),
            ("generate", "cache_dir"), ("eval", "max_tokens"),
            ("eval", "modality")}  # a list, stated comma-separated
RESOLVED_EVERYWHERE = {"split", "max_length", "device", "render_part"}  # the corpus decides


def field_of(command: str, name: str):
    if name in DEDUP_FLAGS:
        return DedupOptions, DEDUP_FLAGS[name]
    if name in RENAMED:
        return RENAMED[name]
    if command == "sweep" and name == "ppi":  # --base-ppi
        return PageOptions, "ppi"
    for model in MODELS[command]:
        if name in model.model_fields:
            return model, name
    return None


def options(command: str):
    return [p for p in main.commands[command].params if isinstance(p, click.Option)]


@pytest.mark.parametrize("command", sorted(MODELS))
def test_every_flag_fills_a_model_field(command):
    orphans = [o.name for o in options(command)
               if o.name not in NOT_FIELDS and field_of(command, o.name) is None]
    assert orphans == []


def stated_default(help_text: str) -> str | None:
    found = re.search(r"\(default:? ([^;),]+)|([\w.-]+) \(default\)", help_text or "")
    if not found:
        return None
    return (found.group(1) or found.group(2)).strip().removesuffix(" px")


@pytest.mark.parametrize("command", sorted(MODELS))
def test_stated_defaults_are_the_models(command):
    checked = 0
    for option in options(command):
        stated = stated_default(option.help)
        target = field_of(command, option.name)
        if stated is None or target is None or (command, option.name) in RESOLVED or \
                option.name in RESOLVED_EVERYWHERE:
            continue
        model, name = target
        default = model.model_fields[name].get_default(call_default_factory=True)
        assert default is not None, f"{command} --{option.name}: add it to RESOLVED"
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        assert stated.split()[0] == shown, (command, option.name, stated, default)
        checked += 1
    assert checked >= {"dedup": 5, "sweep": 5, "eval": 5}.get(command, 6)


def test_the_drift_test_catches_a_drift(monkeypatch):
    monkeypatch.setattr(PageOptions.model_fields["ppi"], "default", 96.0)
    with pytest.raises(AssertionError, match="ppi"):
        test_stated_defaults_are_the_models("render")


def test_list_and_help_name_every_registered_part():
    from click.testing import CliRunner

    from mmconvert.executors import EXECUTORS
    from mmconvert.exporters import EXPORTERS

    listing = CliRunner().invoke(main, ["list"]).output
    for name in EXPORTERS.names() + EXECUTORS.names():
        assert f"  {name} " in listing
    help_text = " ".join(next(o.help for o in options("export") if o.name == "fmt").split())
    for name in EXPORTERS.names():
        assert f"{name}:" in help_text, name
