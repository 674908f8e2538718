"""The CLI's flags are made from the option models (``flags.py``): every field of a command's
models is a flag whose help states the model's own default, a flag fills the field it names, and
a config file's value stands where no flag is given."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel, Field

from mmconvert.cli import main
from mmconvert.config import ApiOptions, ExecutionOptions, Selection, submodel
from mmconvert.evaluation.frontier import FrontierOptions
from mmconvert.evaluation.run import EvalOptions
from mmconvert.flags import fill, meta, model_flags
from mmconvert.options import OPTIONS, cli
from mmconvert.postprocess.sweep import SweepOptions
from mmconvert.renderers import RENDERERS

COMMANDS = {
    "render": [RENDERERS.get("page").config_model, ExecutionOptions],
    "occlude": [RENDERERS.get("occlude").config_model, ExecutionOptions],
    "generate": [RENDERERS.get("generate").config_model, ApiOptions, ExecutionOptions],
    "dedup": [Selection],
    "sweep": [SweepOptions, Selection, ExecutionOptions],
    "eval": [EvalOptions],
    "frontier": [FrontierOptions],
}


def command(name: str) -> click.Command:
    with click.Context(main) as ctx:
        return main.get_command(ctx, name)


def leaves(model: type[BaseModel], path=()):
    """(dotted path, field info) of every field that holds a plain value."""
    for name, info in model.model_fields.items():
        inner = submodel(model, name)
        if inner is not None:
            yield from leaves(inner, (*path, name))
        else:
            yield ".".join((*path, name)), info


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_field_is_a_flag_that_states_its_default(name):
    options = {o.name: o for o in command(name).params if isinstance(o, click.Option)}
    checked = 0
    for model in COMMANDS[name]:
        for dotted, info in leaves(model):
            if meta(info).get("off") or dotted in ("vary", "renderer", "corpus", "out") or \
                    (name == "dedup" and dotted == "renderer"):
                continue
            param = dotted.replace(".", "__")
            assert param in options, f"{name}: {dotted} has no flag"
            default = info.get_default(call_default_factory=True)
            stated = meta(info).get("default")
            if info.is_required():  # a required flag states no default
                assert "(default:" not in options[param].help, (name, dotted)
                continue
            if stated is None and default not in (None, False, [], {}):
                stated = f"{default:g}" if isinstance(default, float) else \
                    ",".join(map(str, default)) if isinstance(default, list) else str(default)
            if stated is not None:
                assert f"(default: {stated})" in options[param].help, (name, dotted)
                checked += 1
    assert checked >= 5


def test_a_new_field_is_a_flag_without_a_line_of_cli_code():
    class Options(BaseModel):
        model_config = OPTIONS
        font_size: float = Field(12.0, description="type size in points")
        names: list[str] = Field(default_factory=list, description="names",
                                 json_schema_extra=cli("--name"))
        ppis: list[float] = Field(default_factory=list, json_schema_extra=cli(split=True))
        ner: bool = Field(True, description="entities kept")

    class Config(BaseModel):
        model_config = OPTIONS
        seed: int = 0
        options: Options = Field(default_factory=Options)

    flags = model_flags(Config)
    assert [f.name for f in flags] == ["--seed", "--font-size", "--name", "--ppis", "--ner"]
    assert flags[1].option.help == "Type size in points (default: 12)."
    given = {"seed": None, "options__font_size": 9.5, "options__names": ("a", "b"),
             "options__ppis": "72, 92.9", "options__ner": False}
    values = fill(flags, given, {"seed": 3, "options": {"font_size": 12.0}})
    assert values == {"seed": 3, "options": {"font_size": 9.5, "names": ["a", "b"],
                                             "ppis": [72.0, 92.9], "ner": False}}
    assert given == {}


def test_flags_fill_the_run_config(tmp_path):
    from mmconvert.renderers.page import RenderConfig  # noqa: F401 - the default renderer

    config = tmp_path / "c.yaml"
    config.write_text("page: {ppi: 72, font_size: 9}\nsample: 3\n")
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "question": "Q?", "options": ["x", "y"], "answer": "A"}\n')
    result = CliRunner().invoke(main, ["render", str(items), "--config", str(config),
                                       "--font-size", "10", "--margin", "0.5",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    import json

    recorded = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert recorded["page"]["ppi"] == 72 and recorded["page"]["font_size"] == 10
    assert recorded["page"]["margin"] == 0.5 and recorded["sample"] == 3


def test_list_and_help_name_every_registered_part():
    from mmconvert.executors import EXECUTORS
    from mmconvert.exporters import EXPORTERS

    listing = CliRunner().invoke(main, ["list"]).output
    for name in EXPORTERS.names() + EXECUTORS.names():
        assert f"  {name} " in listing
    fmt = next(o for o in command("export").params if o.name == "fmt")
    named = " ".join(fmt.help.split()).split(":", 1)[1].split(", or a plugin's")[0]
    assert [n.strip() for n in named.split(",")] == EXPORTERS.built_in()
