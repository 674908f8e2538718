"""A hostile run folder: links that lead elsewhere, a folder that is not a run, recorded paths
that leave the run. Nothing is written outside it, nothing of the user's is deleted, and each
case is one line and a non-zero exit."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import SAMPLE, copy_run
from tests.test_cli import run


@pytest.fixture
def demo(tmp_path, sample_run):
    """The session's sample run, copied: each test here damages its own."""
    return copy_run(sample_run, tmp_path / "demo")


@pytest.fixture
def victim(tmp_path):
    """A file and a folder outside the run that a link points at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    return outside


def untouched(victim) -> bool:
    return sorted(p.name for p in victim.iterdir()) == ["precious.txt"] and \
        (victim / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("name", ["manifest.jsonl", "qa.jsonl", ".mmconvert.lock", "stats"])
def test_no_command_writes_through_a_link_in_the_run_folder(demo, victim, name):
    target = victim if name == "stats" else victim / "precious.txt"
    path = demo / name
    if path.exists():
        path.unlink()
    os.symlink(target, path)
    commands = [("render", "mmlu-redux", "--source", SAMPLE, "--out", demo),
                ("qa", "check", demo, "--checks", "image", "--no-progress"),
                ("stats", demo)]
    for command in commands:
        result = run(*command)
        assert untouched(victim), (command, result.output)
        if result.exit_code:  # one line, after the load's notes
            last = result.output.strip().splitlines()[-1]
            assert last.startswith("Error: ") and "Traceback" not in result.output, result.output
    # the command that would write through the link says so
    writer = {"manifest.jsonl": commands[0], ".mmconvert.lock": commands[0],
              "qa.jsonl": commands[1], "stats": commands[2]}[name]
    result = run(*writer)
    assert result.exit_code == 1 and "is a symbolic link" in result.output, result.output


def test_eval_and_sweep_outputs_are_not_written_through_links(demo, victim, tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    os.symlink(victim / "precious.txt", sweep / ".mmconvert.lock")
    result = run("sweep", demo, "--ppi", "72,150", "--out", sweep)
    assert result.exit_code == 1 and "is a symbolic link" in result.output
    assert untouched(victim)


def test_overwrite_refuses_a_folder_that_is_not_a_run(tmp_path):
    mine = tmp_path / "photos"
    (mine / "images").mkdir(parents=True)
    (mine / "images" / "holiday.jpg").write_bytes(b"jpeg")
    (mine / "stats").mkdir()
    (mine / "stats" / "q3.csv").write_text("a,b")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", mine, "--overwrite")
    assert result.exit_code == 1 and "is not an mmconvert run folder" in result.output
    assert (mine / "images" / "holiday.jpg").read_bytes() == b"jpeg"
    assert (mine / "stats" / "q3.csv").read_text() == "a,b"


@pytest.mark.parametrize("field,value", [("layout.path", "../../outside/precious.txt"),
                                         ("pdf", "/etc/passwd")])
def test_every_recorded_path_is_checked_not_only_the_images(demo, victim, tmp_path, field,
                                                            value):
    lines = (demo / "manifest.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    if field == "pdf":
        row["pdf"] = value
    else:
        row["layout"]["path"] = value
    lines[0] = json.dumps(row, ensure_ascii=False)
    (demo / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    for command in (("export", demo, "--format", "jsonl", "--out", tmp_path / "j"),
                    ("sweep", demo, "--ppi", "72", "--out", tmp_path / "s"),
                    ("transform", demo, "--out", tmp_path / "t", "--apply", "blur:1")):
        result = run(*command)
        assert result.exit_code == 1, (command, result.output)
        assert f"field {field}" in result.output and "not a path inside the run folder" in \
            result.output, result.output
    assert not (tmp_path / "j").exists()


def test_a_fifo_where_an_image_should_be_is_refused_not_waited_on(demo, tmp_path):
    import subprocess
    import sys

    row = json.loads((demo / "manifest.jsonl").read_text().splitlines()[0])
    image = demo / row["images"][0]["path"]
    image.unlink()
    os.mkfifo(image)
    for command in (["qa", "check", demo, "--checks", "image", "--no-progress"],
                    ["sweep", demo, "--scale", "0.5", "--out", tmp_path / "s"]):
        done = subprocess.run([sys.executable, "-m", "mmconvert", *map(str, command)],
                              capture_output=True, text=True, timeout=60)
        assert "Traceback" not in done.stderr, done.stderr
        if command[0] == "sweep":
            assert done.returncode == 1 and "not a regular file" in done.stderr, done.stderr
    events = [json.loads(line) for line in (demo / "qa.jsonl").read_text().splitlines()]
    assert any(e["id"] == row["id"] and e["reason"] == "missing_image" for e in events)


def test_a_duplicated_row_is_never_exported_or_swept_twice(demo, tmp_path):
    lines = (demo / "manifest.jsonl").read_text().splitlines()
    (demo / "manifest.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    item = json.loads(lines[0])["id"]
    for command in (("export", demo, "--format", "jsonl", "--out", tmp_path / "j"),
                    ("sweep", demo, "--scale", "0.5", "--out", tmp_path / "s")):
        result = run(*command)
        assert result.exit_code == 1, result.output
        assert f"item {item!r} is recorded again (first at line 1)" in result.output
    skipped = run("export", demo, "--format", "jsonl", "--out", tmp_path / "k",
                  "--on-error", "skip")
    assert skipped.exit_code == 0 and f"{len(lines)} item(s) exported" in skipped.output
    exported = (tmp_path / "k" / "manifest.jsonl").read_text().splitlines()
    assert len(exported) == len(lines)


def test_the_jsonl_export_checks_image_hashes_like_every_format(demo, tmp_path):
    row = json.loads((demo / "manifest.jsonl").read_text().splitlines()[0])
    image = demo / row["images"][0]["path"]
    image.write_bytes(image.read_bytes() + b"\0")
    result = run("export", demo, "--format", "jsonl", "--out", tmp_path / "j")
    assert result.exit_code == 1 and "has changed since the run (sha256 differs)" in \
        result.output, result.output


@pytest.mark.parametrize("name", ["manifest.jsonl", "qa.jsonl", ".mmconvert.lock"])
def test_no_file_is_written_in_place_through_a_hard_link(demo, victim, name):
    path = demo / name
    if path.exists():
        path.unlink()
    os.link(victim / "precious.txt", path)
    command = {"qa.jsonl": ("qa", "check", demo, "--checks", "image", "--no-progress")}.get(
        name, ("render", "mmlu-redux", "--source", SAMPLE, "--out", demo))
    result = run(*command)
    assert result.exit_code == 1 and "a hard link to a file elsewhere" in result.output, \
        result.output
    assert untouched(victim)


def test_overwrite_deletes_only_what_a_run_wrote(demo):
    (demo / "images" / "holiday.jpg").write_bytes(b"mine")
    (demo / "stats").mkdir()
    (demo / "stats" / "q3.csv").write_text("a,b")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", demo, "--overwrite",
                 "--ppi", "72")
    assert result.exit_code == 0, result.output
    assert "--overwrite left 2 file(s) no run recorded (the first: images/holiday.jpg)" in \
        result.output
    assert (demo / "images" / "holiday.jpg").read_bytes() == b"mine"
    assert (demo / "stats" / "q3.csv").read_text() == "a,b"
    rows = [json.loads(line) for line in (demo / "manifest.jsonl").read_text().splitlines()]
    assert rows[0]["renderer"]["params"]["ppi"] == 72
    assert sorted(p.name for p in (demo / "images").iterdir()) == sorted(
        [r["images"][0]["path"].split("/")[-1] for r in rows] + ["holiday.jpg"])


@pytest.mark.parametrize("name", ["qa.jsonl", "manifest.jsonl", "run.json"])
def test_a_fifo_where_a_run_file_should_be_is_one_line(demo, tmp_path, name):
    import subprocess
    import sys

    (demo / name).unlink(missing_ok=True)
    os.mkfifo(demo / name)
    for command in (["qa", "summary", demo], ["export", demo, "--format", "jsonl", "--out",
                                              tmp_path / "j"]):
        done = subprocess.run([sys.executable, "-m", "mmconvert", *map(str, command)],
                              capture_output=True, text=True, timeout=60)
        if name == "run.json" and done.returncode == 0:
            continue  # a command that does not need run.json does not open it
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("Error: ") and \
            "is not a regular file" in done.stderr, done.stderr
