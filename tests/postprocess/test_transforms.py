"""The transform contract, for every registered transform: options validated by one model,
parameters sampled from a seeded generator apart from a pure apply, boxes moved with the image,
and a history step; then ``mmconvert transform`` and sweeps over any transform."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from mmconvert.errors import UsageError
from mmconvert.imaging import decode
from mmconvert.postprocess.apply import apply_steps, history
from mmconvert.postprocess.transforms import TRANSFORMS, parse_step, transform_class
from mmconvert.postprocess.transforms.base import Transform
from tests.conftest import FIXTURES
from tests.test_cli import run
from tests.test_golden import TRANSFORM_CASES, base_page


@pytest.mark.parametrize("name", TRANSFORMS.built_in())  # a plugin's are its own
def test_every_registered_transform_states_the_contract(name):
    cls = transform_class(name)
    assert issubclass(cls, Transform) and cls.name == name and cls.version
    assert cls.options_model.model_config["extra"] == "forbid"
    assert cls.primary in cls.options_model.model_fields
    assert cls.axis and cls.folder and cls.description and cls.example
    assert name in TRANSFORM_CASES, "a case for the golden table"
    step = parse_step(f"{name}:{cls.example}")
    assert step.step({})["op"] == name
    with pytest.raises(UsageError, match=f"^--apply {name}:{cls.primary}=1,nonsense=2: "):
        parse_step(f"{name}:{cls.primary}=1,nonsense=2")


@pytest.mark.parametrize("name", TRANSFORMS.built_in())  # a plugin's are its own
def test_sampling_is_seeded_and_apply_is_pure(name):
    cls = transform_class(name)
    step = parse_step(f"{name}:{cls.example}")
    image = decode(base_page())
    first = step.sample(random.Random(7), image)
    assert step.sample(random.Random(7), image) == first
    a = step.apply(image.copy(), first)
    b = step.apply(image.copy(), first)
    assert a.tobytes() == b.tobytes()
    if first.get("seed") is not None:  # a seed is the randomness: another one changes pixels
        other = step.sample(random.Random(8), image)
        assert step.apply(image.copy(), other).tobytes() != a.tobytes()


def test_unknown_transform_and_bad_values_are_one_line():
    with pytest.raises(UsageError, match=r"unknown transform 'blurr' .*did you mean 'blur'\?"):
        parse_step("blurr:1")
    with pytest.raises(UsageError, match=r"^--apply blur: needs a value for sigma "
                                         r"\(e\.g\. blur:1\.5\)$"):
        parse_step("blur")
    with pytest.raises(UsageError, match=r"^--apply noise:300,kind=salt-pepper: "):
        parse_step("noise:300,kind=salt-pepper")
    with pytest.raises(UsageError, match=r"^--apply jpeg:0: quality: "):
        parse_step("jpeg:0")


def test_a_chain_moves_boxes_scales_ppi_and_records_its_history():
    image = decode(base_page())
    entry = {"path": "p.png", "ppi": 92.9, "boxes": [{"span": 0, "box": [10, 20, 110, 40]}]}
    steps = [parse_step("scale:0.5"), parse_step("rotate:90"), parse_step("noise:4")]
    data, fmt, made, extra, sampled = apply_steps(image, entry, steps, seed=0,
                                                  item_id="x-1", index=0)
    assert fmt == "png" and image.size == (768, 171) and made.size == (86, 384)
    assert extra["ppi"] == pytest.approx(46.45)
    # the box scales with the page (171 px -> 86 px tall: y 20..40 -> 10.06..20.12) and
    # turns with it, its edges rounded outward
    assert extra["boxes"][0]["box"] == [65, 5, 76, 55]
    assert sampled[0] == {} and sampled[1] == {} and "seed" in sampled[2]
    record = history({"postprocess": [{"op": "earlier"}]}, steps, [sampled])
    assert [r["op"] for r in record] == ["earlier", "scale", "rotate", "noise"]
    assert record[3]["images"] == [sampled[2]] and "images" not in record[1]
    again = apply_steps(image, entry, steps, seed=0, item_id="x-1", index=0)
    assert again[0] == data
    other = apply_steps(image, entry, steps, seed=0, item_id="x-1", index=1)  # other image
    assert other[0] != data


def test_a_jpeg_step_encodes_where_it_stands():
    image = decode(base_page())
    entry = {"path": "p.png", "ppi": 92.9}
    last = apply_steps(image, entry, [parse_step("blur:1"), parse_step("jpeg:60")], seed=0,
                       item_id="x", index=0)
    inner = apply_steps(image, entry, [parse_step("jpeg:60"), parse_step("blur:1")], seed=0,
                        item_id="x", index=0)
    assert last[1] == "jpeg" and inner[1] == "png" and last[0] != inner[0]


def rows(folder):
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]


@pytest.fixture
def demo(sample_run):
    return sample_run


def test_transform_command_writes_a_new_run_with_the_same_items(demo, tmp_path):
    out = tmp_path / "degraded"
    result = run("transform", demo, "--apply", "blur:1.5", "--apply", "jpeg:75", "--out", out)
    assert result.exit_code == 0, result.output
    assert result.output == f"9 item(s) transformed into {out}\n"
    base, made = rows(demo), rows(out)
    assert [r["id"] for r in made] == [r["id"] for r in base]
    assert [r["prompt"] for r in made] == [r["prompt"] for r in base]
    for row in made:
        assert row["postprocess"] == [{"op": "blur", "sigma": 1.5},
                                      {"op": "jpeg", "quality": 75, "subsampling": "4:2:0"}]
        image = row["images"][0]
        assert image["path"].endswith(".jpg")
        data = (out / image["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == image["sha256"] and data[:2] == b"\xff\xd8"
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "complete" and info["transform"]["steps"][1]["quality"] == 75
    # a re-run does nothing; other workers give the same bytes
    assert "0 item(s) transformed" in run("transform", demo, "--apply", "blur:1.5", "--apply",
                                          "jpeg:75", "--out", out).output
    again = tmp_path / "again"
    assert run("transform", demo, "--apply", "blur:1.5", "--apply", "jpeg:75", "--out", again,
               "--workers", "2").exit_code == 0
    assert (again / "manifest.jsonl").read_bytes() == (out / "manifest.jsonl").read_bytes()
    # other steps into the same folder are refused
    result = run("transform", demo, "--apply", "blur:2", "--out", out)
    assert result.exit_code == 1 and "holds a run made with other options" in result.output


def test_transform_command_bad_input(demo, tmp_path):
    result = run("transform", demo, "--out", tmp_path / "x")
    assert result.exit_code == 2 and "give at least one --apply STEP" in result.output
    result = run("transform", demo, "--apply", "blurr:1", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "did you mean 'blur'?" in result.output
    copy = tmp_path / "run"
    import shutil

    shutil.copytree(demo, copy)
    first = rows(copy)[0]
    (copy / first["images"][0]["path"]).unlink()
    result = run("transform", copy, "--apply", "rotate:90", "--out", tmp_path / "t")
    assert result.exit_code == 1 and f"item {first['id']}: field images[0].path" in result.output
    result = run("transform", copy, "--apply", "rotate:90", "--out", tmp_path / "t",
                 "--on-error", "skip")
    assert result.exit_code == 0 and "8 item(s) transformed" in result.output
    assert "1 skipped" in result.output


def test_transforms_keep_an_occlusions_boxes_and_twins(tmp_path):
    vcr = tmp_path / "vcr"
    assert run("occlude", "captions", "--source", FIXTURES / "coco", "--out", vcr,
               "--no-ner").exit_code == 0
    out = tmp_path / "noisy"
    result = run("transform", vcr, "--apply", "noise:level=0.02,kind=salt-pepper", "--apply",
                 "scale:2", "--out", out)
    assert result.exit_code == 0, result.output
    for base, made in zip(rows(vcr), rows(out), strict=True):
        assert [i["role"] for i in made["images"]] == ["stacked", "text_only"]
        for old, new in zip(base["images"], made["images"], strict=True):
            assert new["width"] == old["width"] * 2
            assert [b["box"] for b in new["boxes"]] == [[2 * v for v in b["box"]]
                                                        for b in old["boxes"]]
        seeds = made["postprocess"][0]["images"]
        assert len(seeds) == 2 and seeds[0]["seed"] != seeds[1]["seed"]


def test_a_sweep_varies_any_registered_transform(demo, tmp_path):
    out = tmp_path / "sweep"
    result = run("sweep", demo, "--vary", "blur:0.5,1", "--vary", "noise:6", "--out", out)
    assert result.exit_code == 0, result.output
    sweep = json.loads((out / "sweep.json").read_text())
    assert [v["name"] for v in sweep["variants"]] == ["blur-0.5", "blur-1", "noise-6"]
    assert sweep["options"]["vary"] == {"blur": [0.5, 1.0], "noise": [6.0]}
    assert rows(out / "blur-1")[0]["postprocess"] == [{"op": "blur", "sigma": 1.0}]
    result = run("sweep", demo, "--vary", "blurr:1", "--out", tmp_path / "bad")
    assert result.exit_code == 2 and "did you mean 'blur'?" in result.output


def test_augraphy_writes_nothing_outside_the_run_folder(demo, tmp_path, monkeypatch):
    """Augraphy's own pipeline caches every input image in $PWD/augraphy_cache/; the
    transform calls the augmentations itself, so nothing lands there."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "scanned"
    result = run("transform", demo, "--apply", "augraphy:all", "--out", out, "--workers", "2")
    assert result.exit_code == 0, result.output
    assert list(cwd.iterdir()) == []
    assert rows(out)[0]["postprocess"][0]["images"][0]["seed"] > 0
