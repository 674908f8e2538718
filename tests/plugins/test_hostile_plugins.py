"""A plugin that breaks its contract fails in one line naming it and its package, when it
loads or where it is used, never as a traceback, and never ends a command on its behalf; the
other parts still work (real mmconvert processes, a real distribution on the path)."""

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
from mmconvert.corpora.base import Corpus
from mmconvert.items import Item
from mmconvert.postprocess.transforms.base import Transform, TransformOptions
from pydantic import BaseModel

from mmconvert.options import OPTIONS
from mmconvert.renderers.base import Profile, Redraws, Renderer, item_from_row
from mmconvert.renderers.page import PageRenderer


class NoText(Renderer):
    """a page renderer that does not say what its images show"""
    name = "no-text"
    version = "1"
    config_model = PageRenderer.config_model
    options_model = PageRenderer.options_model
    row_model = PageRenderer.row_model
    job = PageRenderer.__dict__["job"]
    from_params = PageRenderer.__dict__["from_params"]


class NoDrawing(Renderer):
    """says what it shows, draws nothing"""
    name = "no-drawing"
    version = "1"
    options_model = PageRenderer.options_model
    expected_text = PageRenderer.__dict__["expected_text"]


class HalfRedraws(NoText, Redraws):
    """declares it redraws, and implements only where its PPI is"""
    name = "half-redraws"
    expected_text = PageRenderer.__dict__["expected_text"]
    base_ppi = PageRenderer.__dict__["base_ppi"]


class StrayRole(HalfRedraws):
    """its profile has OCR read a role it never writes"""
    name = "stray-role"
    profile = Profile(roles=("page",), ocr=("margin",))


class PartialCer(StrayRole):
    """its profile gives an error rate for English alone"""
    name = "partial-cer"
    profile = Profile(max_cer={"eng": 0.2})


class MinimalOptions(BaseModel):
    model_config = OPTIONS


class Minimal(Renderer):
    """the least a renderer states: a name, a version, options, draw and its text"""
    name, version, options_model = "minimal", "1", MinimalOptions

    def draw(self, item, part):
        from PIL import Image, ImageDraw, ImageFont

        image = Image.new("L", (900, 60 + 40 * len(item.options)), 255)
        ImageDraw.Draw(image).multiline_text((20, 20), self.text(item), fill=0,
                                             font=ImageFont.load_default(28))
        return [image]

    @staticmethod
    def text(item):
        return "\\n".join(item.options)

    @classmethod
    def expected_text(cls, row):
        return cls.text(item_from_row(row))


class Dicts(Corpus):
    name = "dicts"
    description = "rows as dicts, not Items"

    def load(self, request, report):
        return [{"id": "a", "question": "q"}]


class Raises(Corpus):
    name = "raises"
    description = "a load that raises"

    def load(self, request, report):
        raise ValueError("the source went away")


class LazyRaises(Corpus):
    name = "lazy-raises"
    description = "an iterator that raises part way"

    def load(self, request, report):
        yield Item(id="a-000", corpus="lazy-raises", subset="a", split="test", question="q?",
                   options=["x", "y"], answer="A")
        raise RuntimeError("row 2 is gone")


class NoneOptions(TransformOptions):
    level: float = 1


class GivesNone(Transform):
    name = "gives-none"
    options_model = NoneOptions
    primary = axis = folder = "level"
    description = "returns None"
    example = "1"

    def apply(self, image, params):
        return None


class GivesText(GivesNone):
    name = "gives-text"

    def apply(self, image, params):
        return "an image, honestly"


def raises(source, staging, out, name, **options):
    """raises"""
    raise OSError("disk on fire")


def many(source, staging, out, name, **options):
    """says many"""
    return "many"
'''

EXITS = "import sys\nsys.exit(0)\n"
INTERRUPTS = "raise KeyboardInterrupt\n"

ENTRY_POINTS = """
[mmconvert.renderers]
no-text = mmc_hostile:NoText
no-drawing = mmc_hostile:NoDrawing
half-redraws = mmc_hostile:HalfRedraws
stray-role = mmc_hostile:StrayRole
partial-cer = mmc_hostile:PartialCer
minimal = mmc_hostile:Minimal
exits = mmc_exits:Nothing

[mmconvert.corpora]
dicts = mmc_hostile:Dicts
raises = mmc_hostile:Raises
lazy-raises = mmc_hostile:LazyRaises
interrupts = mmc_interrupts:Nothing

[mmconvert.transforms]
gives-none = mmc_hostile:GivesNone
gives-text = mmc_hostile:GivesText

[mmconvert.exporters]
raises = mmc_hostile:raises
many = mmc_hostile:many
"""
PACKAGE = "'mmc-hostile'"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    (site / "mmc_hostile.py").write_text(MODULE)
    (site / "mmc_exits.py").write_text(EXITS)
    (site / "mmc_interrupts.py").write_text(INTERRUPTS)
    info = site / "mmc_hostile-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mmc-hostile\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return site


def mmconvert(site: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def one_line(done: subprocess.CompletedProcess, code: int, *said: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "Aborted" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, done.stderr
    for text in said:
        assert text in errors[0], errors[0]


def test_list_lists_every_part_and_each_broken_plugin_in_a_line(site):
    done = mmconvert(site, "list")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    out = done.stdout
    for text in ("mmlu-redux", "page", "blur", "lmms-eval",
                 "no-text        cannot be used: plugin renderer 'no-text' from package "
                 f"{PACKAGE} (mmc_hostile:NoText) lacks expected_text()",
                 "exits          cannot be used: plugin renderer 'exits' from package "
                 f"{PACKAGE} (mmc_exits:Nothing) cannot be loaded (SystemExit: 0)",
                 "interrupts     cannot be used: plugin corpus 'interrupts' from package "
                 f"{PACKAGE} (mmc_interrupts:Nothing) cannot be loaded (KeyboardInterrupt)"):
        assert text in out, text


@pytest.mark.parametrize(("name", "said"), [
    ("no-text", "lacks expected_text(), which every Renderer states"),
    ("no-drawing", "implements neither draw() nor job()"),
    ("half-redraws", "declares Redraws but does not implement redraw_at()"),
    ("stray-role", "profile.ocr names margin, not among its roles"),
    ("partial-cer", "profile.max_cer names no 'default'"),
])
def test_a_renderer_that_breaks_its_contract_is_refused_when_it_loads(site, tmp_path, name,
                                                                      said):
    """Checked when the plugin loads, before any item: one line naming it and the member."""
    one_line(mmconvert(site, "render", "mmlu-redux", "--source", SAMPLE, "--renderer",
                       name, "--out", tmp_path / "r"), 2, f"plugin renderer {name!r}", said)
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_the_least_renderer_renders_and_passes_qa_check(site, tmp_path):
    """A renderer of a name, a version, options, draw and expected_text (no profile, no
    threshold): it renders, and qa check reads every image with the uncalibrated error rate
    (``renderers.base.UNCALIBRATED_CER``) instead of stopping on a missing threshold."""
    out = tmp_path / "r"
    done = mmconvert(site, "render", "mmlu-redux", "--source", SAMPLE, "--renderer",
                     "minimal", "--limit", "3", "--out", out)
    assert done.returncode == 0, done.stderr
    checked = mmconvert(site, "qa", "check", out, "--checks", "ocr,image", "--jobs", "1")
    assert checked.returncode == 0 and "Error" not in checked.stderr, checked.stderr
    events = [json.loads(line) for line in (out / "qa.jsonl").read_text().splitlines()]
    ocr = [e for e in events if e["source"] == "auto:ocr"]
    assert len(ocr) == 3 and all(e["verdict"] == "accept" for e in ocr), ocr


@pytest.mark.parametrize(("corpus", "said"), [
    ("dicts", "plugin corpus 'dicts' from package 'mmc-hostile': load gave a dict, not an "
              "mmconvert.items.Item"),
    ("raises", "plugin corpus 'raises' from package 'mmc-hostile' failed to load (ValueError: "
               "the source went away)"),
    ("lazy-raises", "plugin corpus 'lazy-raises' from package 'mmc-hostile' failed while "
                    "loading (RuntimeError: row 2 is gone)"),
    ("interrupts", "cannot be loaded (KeyboardInterrupt)"),
])
def test_a_corpus_that_breaks_its_contract_is_one_line(site, tmp_path, corpus, said):
    one_line(mmconvert(site, "render", corpus, "--out", tmp_path / "r"), 2, said)


def test_a_plugin_that_exits_at_import_does_not_end_the_command(site, tmp_path):
    done = mmconvert(site, "render", "mmlu-redux", "--source", SAMPLE, "--renderer", "exits",
                     "--out", tmp_path / "r")
    one_line(done, 2, "cannot be loaded (SystemExit: 0)")
    made = mmconvert(site, "render", "mmlu-redux", "--source", SAMPLE, "--out", tmp_path / "ok")
    assert made.returncode == 0, made.stderr


@pytest.fixture(scope="module")
def demo(site, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "run"
    done = mmconvert(site, "render", "mmlu-redux", "--source", SAMPLE, "--limit", "2", "--out",
                     out)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize(("step", "said"), [
    ("gives-none:1", "transform 'gives-none' from package 'mmc-hostile' gave NoneType, not a "
                     "PIL image"),
    ("gives-text:1", "transform 'gives-text' from package 'mmc-hostile' gave str, not a PIL "
                     "image"),
])
def test_a_transform_that_gives_no_image_is_one_line(site, demo, tmp_path, step, said):
    one_line(mmconvert(site, "transform", demo, "--apply", step, "--out", tmp_path / "t"), 2,
             said)


@pytest.mark.parametrize(("fmt", "said"), [
    ("raises", "export format 'raises' from package 'mmc-hostile' failed (OSError: disk on "
               "fire); nothing was written to"),
    ("many", "export format 'many' from package 'mmc-hostile' gave 'many' where a count of "
             "the items written is due"),
])
def test_an_exporter_that_fails_or_miscounts_is_one_line_and_writes_nothing(
        site, demo, tmp_path, fmt, said):
    out = tmp_path / "e"
    one_line(mmconvert(site, "export", demo, "--format", fmt, "--out", out), 1, said)
    assert not out.exists()
    assert "exported" not in json.dumps(os.listdir(tmp_path))
