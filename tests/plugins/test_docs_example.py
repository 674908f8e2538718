"""docs/plugins.md's example package, as a reader would use it: its fenced files written out
as they stand, the folder pip-installed (offline, without build isolation), and the commands
it shows run in real processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "plugins.md"
FENCE = re.compile(r"^```[a-z]*\n# file: (?P<path>\S+)\n(?P<body>.*?)^```$", re.M | re.S)


def files() -> dict[str, str]:
    return {m["path"]: f"# file: {m['path']}\n{m['body']}" for m in FENCE.finditer(
        DOC.read_text(encoding="utf-8"))}


def test_every_example_file_is_short():
    found = files()
    assert sorted(found) == ["mmc-riddles/mmc_riddles/__init__.py", "mmc-riddles/pyproject.toml"]
    module = found["mmc-riddles/mmc_riddles/__init__.py"]
    # each part is at most about 40 lines
    for part in re.split(r"\n\n\n(?=class |def )", module):
        assert part.count("\n") <= 45, part[:60]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("example")
    for rel, text in files().items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    site = folder / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(site),
                           str(folder / "mmc-riddles")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return site


def mmconvert(site: Path, cwd: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "mmconvert", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.slow
def test_the_example_installs_and_every_command_it_shows_works(installed, tmp_path):
    listed = mmconvert(installed, tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    for name in ("riddles", "invert", "ids"):
        assert re.search(rf"^  {name} .*\[from mmc-riddles\]$", listed.stdout, re.M), name
    commands = re.search(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)[1]
    for line in commands.strip().splitlines():
        args = line.split("#")[0].split()[1:]
        done = mmconvert(installed, tmp_path, *args)
        assert done.returncode == 0, (line, done.stderr)
        assert "Traceback" not in done.stderr
    rows = [json.loads(r) for r in (tmp_path / "runs/riddles/manifest.jsonl").read_text()
            .splitlines()]
    assert [(r["id"], r["answer"]) for r in rows] == [("riddles-000", "A"), ("riddles-001", "B")]
    assert (tmp_path / "exports/riddles/ids.txt").read_text() == "riddles-000\nriddles-001\n"
    assert sorted(p.name for p in (tmp_path / "runs/riddles-sweep").iterdir()
                  if p.is_dir()) == ["invert-0.25", "invert-1"]
    # the plugin renderer: its option a flag, its rows its own, its bytes pinned (its golden),
    # the same by its own command and by render --renderer, and read back by OCR
    banner = [json.loads(r) for r in (tmp_path / "runs/riddles-banner/manifest.jsonl")
              .read_text().splitlines()]
    assert banner[0]["renderer"] == {"name": "banner", "version": "1", "params": {"size": 32}}
    assert [r["images"][0]["sha256"] for r in banner] == [
        "f69cbf18c16f355a6fb5349209ff20811465e0f1afe4d35cd029fe0625475050",
        "76b6002120a3970bd3d4059dfe1865a0b0f9b9f979165186417a3652da26f2ad"]
    qa = [json.loads(r) for r in (tmp_path / "runs/riddles-banner/qa.jsonl").read_text()
          .splitlines()]
    assert {(e["source"], e["verdict"]) for e in qa} == {("auto:image", "accept"),
                                                        ("auto:ocr", "accept")}
    assert (tmp_path / "exports/riddles-banner/README.md").is_file()


# the tests that list parts: each reads the built-ins, or the parts this environment holds
LISTING_TESTS = ["tests/renderers/test_contract.py", "tests/test_cli_options.py",
                 "tests/test_run_kinds.py", "tests/postprocess/test_transforms.py",
                 "tests/test_golden.py", "tests/test_reference.py",
                 "tests/test_one_line_errors.py"]


@pytest.mark.slow
def test_the_tests_that_list_parts_pass_with_a_plugin_installed(installed):
    """Issue 53: with one third-party plugin in the environment, 20 tests failed (their
    "known:" lists, the reference). The example package adds a renderer, a corpus, a
    transform and an exporter."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-m", "not slow", *LISTING_TESTS], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
