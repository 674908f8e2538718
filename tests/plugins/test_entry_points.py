"""Parts from other packages through entry points: a real distribution (its dist-info with
entry_points.txt, found by importlib.metadata on the path), used by real mmconvert processes.
A plugin that cannot be used is one line naming it and its package; the rest still work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE

ROOT = Path(__file__).resolve().parents[2]

MODULE = '''
from pydantic import Field

from mmconvert.corpora.base import Corpus, CorpusOptions
from mmconvert.items import Item
from mmconvert.postprocess.transforms.base import Transform, TransformOptions


class InvertOptions(TransformOptions):
    strength: float = Field(gt=0, le=1, description="how far toward the negative")


class Invert(Transform):
    name = "invert"
    options_model = InvertOptions
    description = "blend toward the photographic negative"
    example = "1"
    primary = "strength"
    axis = folder = "invert"

    def apply(self, image, params):
        from PIL import Image, ImageOps

        image = image.convert("L") if image.mode not in ("L", "RGB") else image
        return Image.blend(image, ImageOps.invert(image), self.options.strength)


class RiddlesOptions(CorpusOptions):
    only: str | None = Field(None, description="only the riddle with this id")


class Riddles(Corpus):
    name = "riddles"
    description = "two riddles from a plugin (MCQ)"
    options_model = RiddlesOptions

    def load(self, request, report):
        report.rows = 2
        only = self.options_of(request).only
        items = [Item(id=f"riddles-{n:03d}", corpus=self.name, subset="riddles", split="test",
                      question=q, options=["a shadow", "an echo", "a map"], answer=a)
                 for n, (q, a) in enumerate([("What follows you at noon?", "A"),
                                             ("What answers without a mouth?", "B")])]
        return [item for item in items if only in (None, item.id)]


def ids_only(source, staging, out, name, **options):
    """the kept items' ids, one a line"""
    ids = [record.id for record in source.records()]
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "ids.txt").write_text("".join(i + chr(10) for i in ids))
    return len(ids)


class NotATransform:
    name = "bogus"
'''

ENTRY_POINTS = """
[mmconvert.transforms]
invert = mmc_demo_plugin:Invert
bogus = mmc_demo_plugin:NotATransform
blur = mmc_demo_plugin:Invert

[mmconvert.corpora]
riddles = mmc_demo_plugin:Riddles
missing = mmc_demo_plugin_gone:Nothing

[mmconvert.exporters]
ids = mmc_demo_plugin:ids_only

[mmconvert.renderers]
sketch = mmc_demo_plugin:NotATransform
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder on the path holding the plugin module and its distribution's metadata."""
    site = tmp_path_factory.mktemp("site")
    (site / "mmc_demo_plugin.py").write_text(MODULE)
    info = site / "mmc_demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mmc-demo-plugin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return site


def mmconvert(site: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


CLASH = ("mmconvert: plugin transform 'blur' from package 'mmc-demo-plugin' is not used: "
         "'mmconvert' already provides a transform of that name")


def test_list_names_each_plugin_and_its_package_and_what_is_broken(site):
    done = mmconvert(site, "list")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "  invert         strength 1         blend toward the photographic negative" \
           "  [from mmc-demo-plugin]" in out
    assert "riddles" in out and "two riddles from a plugin (MCQ)  [from mmc-demo-plugin]" in out
    assert "  ids            the kept items' ids, one a line  [from mmc-demo-plugin]" in out
    assert "bogus          cannot be used: plugin transform 'bogus' from package " \
           "'mmc-demo-plugin' (mmc_demo_plugin:NotATransform) is not a subclass of " \
           "mmconvert.postprocess.transforms.base.Transform" in out
    assert "missing        cannot be used: plugin corpus 'missing' from package " \
           "'mmc-demo-plugin' (mmc_demo_plugin_gone:Nothing) cannot be loaded " \
           "(ModuleNotFoundError: No module named 'mmc_demo_plugin_gone')" in out
    assert "  ! " + CLASH.removeprefix("mmconvert: ") in out
    assert CLASH in done.stderr  # said once, on stderr
    assert "Traceback" not in done.stderr


def test_a_plugin_corpus_transform_and_exporter_work_like_built_in_ones(site, tmp_path):
    run = tmp_path / "run"
    made = mmconvert(site, "render", "riddles", "--out", run)
    assert made.returncode == 0, made.stderr
    rows = [json.loads(line) for line in (run / "manifest.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["riddles-000", "riddles-001"]
    assert rows[0]["corpus"] == "riddles" and rows[0]["answer"] == "A"
    inverted = mmconvert(site, "transform", run, "--apply", "invert:0.5", "--out",
                         tmp_path / "inv")
    assert inverted.returncode == 0, inverted.stderr
    step = json.loads((tmp_path / "inv" / "manifest.jsonl").read_text().splitlines()[0])
    assert step["postprocess"][0] == {"op": "invert", "strength": 0.5}
    swept = mmconvert(site, "sweep", run, "--vary", "invert:0.25,1", "--out", tmp_path / "sw")
    assert swept.returncode == 0, swept.stderr
    assert sorted(p.name for p in (tmp_path / "sw").iterdir() if p.is_dir()) == [
        "invert-0.25", "invert-1"]
    exported = mmconvert(site, "export", run, "--format", "ids", "--out", tmp_path / "ids")
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "ids" / "ids.txt").read_text() == "riddles-000\nriddles-001\n"
    # the built-in blur is still blur, whatever the plugin that clashes with it says
    blurred = mmconvert(site, "transform", run, "--apply", "blur:1", "--out", tmp_path / "b")
    assert blurred.returncode == 0 and CLASH in blurred.stderr


@pytest.mark.slow
def test_a_plugin_corpus_takes_options_as_flags_once_it_is_named(site, tmp_path):
    """The plugin's options model is its corpus's flags (and its config section), as a
    built-in corpus's are; another corpus is told the flag is not its own."""
    helped = mmconvert(site, "render", "riddles", "--help")
    assert helped.returncode == 0 and "--only TEXT" in helped.stdout
    assert "only the riddle with this id" in helped.stdout.replace("\n", " ").lower()
    assert "--only" not in mmconvert(site, "render", "--help").stdout
    run = tmp_path / "run"
    made = mmconvert(site, "render", "riddles", "--only", "riddles-001", "--out", run)
    assert made.returncode == 0, made.stderr
    rows = [json.loads(line) for line in (run / "manifest.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["riddles-001"]
    recorded = json.loads((run / "run.json").read_text())["config"]["corpus_options"]
    assert recorded == {"only": "riddles-001"}
    config = tmp_path / "config.yaml"
    config.write_text("corpus_options: {only: riddles-000}\n")
    from_file = mmconvert(site, "render", "riddles", "--config", config, "--out",
                          tmp_path / "file")
    assert from_file.returncode == 0, from_file.stderr
    assert (tmp_path / "file" / "manifest.jsonl").read_text().count("\n") == 1
    other = mmconvert(site, "render", "mmlu-redux", "--source", SAMPLE, "--only", "x",
                      "--out", tmp_path / "other")
    assert other.returncode == 2
    assert other.stderr == ("Error: --only does not apply to mmlu-redux (its options: "
                            "--keep-flagged)\n")


SKETCH = ("Error: plugin renderer 'sketch' from package 'mmc-demo-plugin' "
          "(mmc_demo_plugin:NotATransform) is not a subclass of "
          "mmconvert.renderers.base.Renderer")


@pytest.mark.parametrize("args,message", [
    (("render", "missing", "--out", "OUT"),
     "Error: plugin corpus 'missing' from package 'mmc-demo-plugin' "
     "(mmc_demo_plugin_gone:Nothing) cannot be loaded (ModuleNotFoundError"),
    (("transform", "RUN", "--apply", "bogus:1", "--out", "OUT"),
     "Error: plugin transform 'bogus' from package 'mmc-demo-plugin' "
     "(mmc_demo_plugin:NotATransform) is not a subclass of"),
    (("sketch", "mmlu-redux", "--out", "OUT"), SKETCH),  # its own command
    (("render", "mmlu-redux", "--renderer", "sketch", "--out", "OUT"), SKETCH),
    (("render", "mmlu-redux", "--renderer", "skecth", "--out", "OUT"),
     "Error: unknown renderer 'skecth' (known: document, generate, occlude, page, sketch); did you "
     "mean 'sketch'?"),
    (("transform", "RUN", "--apply", "invrt:1", "--out", "OUT"),
     "Error: unknown transform 'invrt' (known: augraphy, blur, bogus, invert, jpeg, noise, "
     "rotate, scale); did you mean 'invert'?"),
])
def test_a_broken_or_unknown_plugin_is_one_line(site, tmp_path, args, message):
    run = tmp_path / "run"
    assert mmconvert(site, "render", "mmlu-redux", "--source", SAMPLE, "--limit", 1,
                     "--out", run).returncode == 0
    args = [str(run) if a == "RUN" else str(tmp_path / "out") if a == "OUT" else a
            for a in args]
    done = mmconvert(site, *args)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(message), done.stderr
