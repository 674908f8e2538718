"""``mmconvert sweep``: PPI re-draws of page runs, scale/rotate/JPEG variants of any run."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from mmconvert.cli import main
from mmconvert.imaging import rotate_box
from mmconvert.manifest import JsonlLog
from tests.conftest import FIXTURES, REDUX_CSV, copy_run
from tests.line_slots import line_extents

COCO = FIXTURES / "coco"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def rows(folder: Path) -> list[dict]:
    return JsonlLog(folder / "manifest.jsonl").read()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


WORDS = ("the of and to in a is that for it as was with be by on not reading benchmark "
         "vision language token image page context question answer measure result evidence "
         "probability distribution Mary John kitchen garden hallway bathroom office").split()


@pytest.fixture(scope="module")
def long_items(tmp_path_factory):
    """Three long contexts (several pages each) in the generic JSONL schema."""
    import random

    rng = random.Random(7)
    path = tmp_path_factory.mktemp("corpus") / "long.jsonl"
    lines = []
    for n in range(3):
        paragraphs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 120)))
                                for _ in range(3)) for _ in range(12 + 4 * n)]
        lines.append(json.dumps({"id": f"long-{n}", "context": "\n\n".join(paragraphs),
                                 "question": "Where is Mary?", "answer": ["garden"]}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def long_sweep(long_items, tmp_path_factory):
    """Long contexts rendered once and swept over four PPIs."""
    out = tmp_path_factory.mktemp("sweep") / "s"
    result = run("sweep", long_items, "--render", "context", "--ppi", "72,92.9,150,300",
                 "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_sweep_json_lists_every_variant_and_the_base_stands_for_its_own_value(long_sweep):
    sweep = json.loads((long_sweep / "sweep.json").read_text())
    assert sweep["status"] == "complete" and sweep["base"] == "base"
    assert sweep["variants"] == [
        {"name": "ppi-72", "path": "ppi-72", "ppi": 72},
        {"name": "ppi-92.9", "path": "base", "ppi": 92.9},
        {"name": "ppi-150", "path": "ppi-150", "ppi": 150},
        {"name": "ppi-300", "path": "ppi-300", "ppi": 300}]
    base = rows(long_sweep / "base")
    for entry in sweep["variants"]:
        variant = rows(long_sweep / entry["path"])
        assert [r["id"] for r in variant] == [r["id"] for r in base]
        assert [r["text_prompt"] for r in variant] == [r["text_prompt"] for r in base]
        assert all(r["renderer"]["params"]["ppi"] == entry["ppi"] for r in variant)
        assert all(img["ppi"] == entry["ppi"] for r in variant for img in r["images"])


def test_ppi_variants_are_byte_identical_to_direct_renders(long_sweep, long_items,
                                                             tmp_path):
    direct = tmp_path / "direct"
    result = run("render", long_items, "--render", "context", "--ppi", 150, "--out", direct)
    assert result.exit_code == 0
    swept = rows(long_sweep / "ppi-150")
    assert sum(len(r["images"]) for r in swept) > len(swept)  # several pages per item
    assert [img for r in swept for img in r["images"]] == [
        img for r in rows(direct) for img in r["images"]]
    for row in swept:
        for img in row["images"]:
            assert digest(long_sweep / "ppi-150" / img["path"]) == img["sha256"]


def test_line_and_page_breaks_are_the_same_at_every_ppi(long_sweep):
    """Measured on the pixels: each line slot's ink spans the same stretch of the page (in
    points) at 72, 92.9, 150 and 300 PPI, and the page count is the same."""
    names = ["base", "ppi-72", "ppi-150", "ppi-300"]
    runs = {name: rows(long_sweep / name) for name in names}
    checked = 0
    for index, base_row in enumerate(runs["base"]):
        layout = json.loads((long_sweep / "base" / base_row["layout"]["path"]).read_text())
        pages = {}
        for name in names:
            row = runs[name][index]
            assert len(row["images"]) == len(base_row["images"])
            assert row["layout"] == base_row["layout"]
            pages[name] = [line_extents((long_sweep / name / img["path"]).read_bytes(),
                                        img["ppi"], layout["pitch"], layout["margin"])
                           for img in row["images"]]
        for page, stored in zip(pages["base"], layout["pages"], strict=True):
            assert [e is not None for e in page] == [bool(line) for line in stored][:len(page)]
        for name in names[1:]:
            for mine, theirs in zip(pages[name], pages["base"], strict=True):
                assert len(mine) == len(theirs)
                for a, b in zip(mine, theirs, strict=True):
                    assert (a is None) == (b is None)
                    if a is not None:
                        # within two pixels at 72 PPI; a moved word is 10 points or more
                        assert abs(a[0] - b[0]) < 2.5 and abs(a[1] - b[1]) < 2.5
                        checked += 1
    assert checked > 100


def test_a_moved_word_would_be_caught():
    """The measure above tells breaks apart: the same text broken one word earlier differs."""
    from mmconvert.renderers.page import PageOptions, PageRenderer
    from tests.conftest import make_item

    renderer = PageRenderer(PageOptions(ppi=72))
    text = "word " * 60
    record = renderer.render(make_item(context=text), "context").layout
    moved = json.loads(json.dumps(record))
    line = moved["pages"][0][0]
    line[-1][2] = line[-1][2].rsplit(" ", 2)[0]  # the last word of line 1 goes
    a = line_extents(renderer.redraw(record)[0].png, 72, record["pitch"], record["margin"])
    b = line_extents(renderer.redraw(moved)[0].png, 72, record["pitch"], record["margin"])
    assert abs(a[0][1] - b[0][1]) > 10


def test_scale_rotate_and_jpeg_variants_of_a_page_run(tmp_path):
    out = tmp_path / "s"
    result = run("sweep", "mmlu-redux", "--source", REDUX_CSV, "--limit", 3, "--out", out,
                 "--scale", "0.5,1,2", "--rotate", "0,90,7", "--jpeg-quality", 75,
                 "--resample", "bicubic")
    assert result.exit_code == 0, result.output
    base = rows(out / "base")
    half, double = rows(out / "scale-0.5"), rows(out / "scale-2")
    for b, h, d in zip(base, half, double, strict=True):
        image, small, big = b["images"][0], h["images"][0], d["images"][0]
        assert (small["width"], small["height"]) == (round(image["width"] / 2 + 0.01),
                                                     round(image["height"] / 2 + 0.01))
        assert (big["width"], big["height"]) == (image["width"] * 2, image["height"] * 2)
        assert big["ppi"] == pytest.approx(92.9 * 2) and small["ppi"] == pytest.approx(46.45)
        assert h["postprocess"] == [{"op": "scale", "factor": 0.5, "resample": "bicubic"}]
        with Image.open(out / "scale-2" / big["path"]) as png:
            assert png.size == (big["width"], big["height"])
            assert round(png.info["dpi"][0], 1) == pytest.approx(185.8, abs=0.1)
    turned = rows(out / "rotate-90")[0]["images"][0]
    image = base[0]["images"][0]
    assert (turned["width"], turned["height"]) == (image["height"], image["width"])
    with Image.open(out / "base" / image["path"]) as a, \
            Image.open(out / "rotate-90" / turned["path"]) as b:
        assert a.transpose(Image.Transpose.ROTATE_270).tobytes() == b.tobytes()
    tilted = rows(out / "rotate-7")[0]
    assert tilted["postprocess"][0]["resample"] == "bicubic"
    small = tilted["images"][0]
    assert small["width"] > image["width"] and small["height"] > image["height"]
    with Image.open(out / "rotate-7" / small["path"]) as png:
        assert png.getpixel((0, 0)) == png.getpixel((png.width - 1, png.height - 1)) == 255
        assert png.getextrema()[0] < 50  # the text is still there
    assert small["background"] == 255
    jpeg = rows(out / "jpeg-75")[0]
    assert jpeg["images"][0]["path"].endswith(".jpg")
    assert jpeg["postprocess"] == [{"op": "jpeg", "quality": 75, "subsampling": "4:2:0"}]
    with Image.open(out / "jpeg-75" / jpeg["images"][0]["path"]) as picture:
        assert picture.format == "JPEG"
    sweep = json.loads((out / "sweep.json").read_text())
    assert {v["name"]: v["path"] for v in sweep["variants"]} == {
        "scale-0.5": "scale-0.5", "scale-1": "base", "scale-2": "scale-2",
        "rotate-0": "base", "rotate-90": "rotate-90", "rotate-7": "rotate-7",
        "jpeg-75": "jpeg-75"}


@pytest.fixture(scope="module")
def occlusions(tmp_path_factory):
    out = tmp_path_factory.mktemp("occ") / "run"
    result = run("occlude", "captions", "--source", COCO, "--out", out, "--limit", 4)
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("degrees", [90, 180, 270, 30])
def test_rotation_moves_the_occlusion_bands_with_the_image(occlusions, tmp_path, degrees):
    out = tmp_path / "s"
    assert run("sweep", occlusions, "--rotate", degrees, "--out", out).exit_code == 0
    for row in rows(out / f"rotate-{degrees}"):
        assert len(row["images"]) == 2
        for image in row["images"]:
            assert image["boxes"]
            with Image.open(out / f"rotate-{degrees}" / image["path"]) as picture:
                gray = picture.convert("L")
                assert gray.size == (image["width"], image["height"])
                for band in image["boxes"]:
                    box = band["box"]
                    if degrees % 90 == 0:  # exact: the band is still all white
                        assert gray.crop(tuple(box)).getextrema() == (255, 255)
                    else:  # the box around the turned band: its centre is white
                        cx, cy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
                        assert gray.getpixel((cx, cy)) > 240


def test_scaling_moves_the_bands_too(occlusions, tmp_path):
    out = tmp_path / "s"
    assert run("sweep", occlusions, "--scale", "0.5,2", "--out", out).exit_code == 0
    base = rows(occlusions)
    for name, factor in (("scale-0.5", 0.5), ("scale-2", 2)):
        for b, row in zip(base, rows(out / name), strict=True):
            for before, after in zip(b["images"], row["images"], strict=True):
                for x, y in zip(before["boxes"], after["boxes"], strict=True):
                    assert y["span"] == x["span"]
                    assert y["box"][0] == pytest.approx(x["box"][0] * factor, abs=1)
                    assert y["box"][3] == pytest.approx(x["box"][3] * factor, abs=1)


def test_rotate_box_at_right_angles_is_exact():
    box = [10, 20, 30, 25]
    assert rotate_box(box, 90, (100, 50), (50, 100)) == [25, 10, 30, 30]
    assert rotate_box(box, 180, (100, 50), (100, 50)) == [70, 25, 90, 30]
    assert rotate_box(box, 270, (100, 50), (50, 100)) == [20, 70, 25, 90]


def test_ppi_needs_a_page_run(occlusions, tmp_path):
    result = run("sweep", occlusions, "--ppi", 150, "--out", tmp_path / "s")
    assert result.exit_code == 2
    assert "was made by the occlude renderer: use --scale" in result.output


def test_a_resumed_sweep_makes_only_what_is_missing(tmp_path):
    out = tmp_path / "s"
    args = ("sweep", "mmlu-redux", "--source", REDUX_CSV, "--limit", 4, "--out", out,
            "--ppi", "72,150", "--rotate", 90)
    assert run(*args).exit_code == 0
    # as if killed after the second item of ppi-150: its manifest is a prefix
    log = JsonlLog(out / "ppi-150" / "manifest.jsonl")
    full = log.read()
    log.rewrite(full[:2])
    with open(log.path, "a") as handle:
        handle.write('{"id": "torn')
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.png")}
    result = run(*args)
    assert result.exit_code == 0
    assert "2 item image set(s) made" in result.output and "10 already done" in result.output
    assert log.read() == full
    changed = [p for p in out.rglob("*.png") if p.stat().st_mtime_ns != stamps.get(p)]
    assert sorted(p.parent.parent.name for p in changed) == ["ppi-150", "ppi-150"]


def test_same_bytes_for_any_worker_count(tmp_path):
    def files(folder):
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
                if p.is_file() and p.name != "run.json"}

    for workers in (1, 2):
        result = run("sweep", "mmlu-redux", "--source", REDUX_CSV, "--limit", 5, "--out",
                     tmp_path / str(workers), "--ppi", 150, "--scale", 0.5, "--jpeg-quality", 80,
                     "--workers", workers)
        assert result.exit_code == 0
    assert files(tmp_path / "1") == files(tmp_path / "2")


def test_a_missing_image_stops_the_sweep_naming_it_or_is_skipped(tmp_path, csv_run):
    base = copy_run(csv_run, tmp_path / "base")  # one of its images is taken away
    gone = rows(base)[1]
    (base / gone["images"][0]["path"]).unlink()
    result = run("sweep", base, "--scale", 0.5, "--out", tmp_path / "s")
    assert result.exit_code == 1
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"Error: {base / 'manifest.jsonl'}: item {gone['id']}: field "
                           f"images[0].path: {base / gone['images'][0]['path']} is missing")
    result = run("sweep", base, "--scale", 0.5, "--out", tmp_path / "s", "--on-error", "skip")
    assert result.exit_code == 0 and "1 skipped" in result.output
    skipped = JsonlLog(tmp_path / "s" / "scale-0.5" / "skipped.jsonl").read()
    assert [(s["id"], s["stage"]) for s in skipped] == [(gone["id"], "sweep")]
    assert [r["id"] for r in rows(tmp_path / "s" / "scale-0.5")] == [
        r["id"] for r in rows(base) if r["id"] != gone["id"]]


def test_options_from_a_yaml_file_and_bad_options(tmp_path, csv_run):
    base = csv_run
    config = tmp_path / "sweep.yaml"
    config.write_text("sweep:\n  ppi: [72]\n  scale: [0.25]\n  resample: nearest\n")
    result = run("sweep", base, "--config", config, "--out", tmp_path / "s")
    assert result.exit_code == 0, result.output
    assert rows(tmp_path / "s" / "scale-0.25")[0]["postprocess"][0]["resample"] == "nearest"
    assert (tmp_path / "s" / "ppi-72" / "manifest.jsonl").exists()
    for args, message in (
            (("--scale", "0"), "Error: --scale: 0 is not a scale factor in (0, 16]\n"),
            (("--ppi", "a,b"), "Invalid value for --ppi: expected comma-separated numbers"),
            ((), "give at least one of --ppi"),
            (("--ppi", 72, "--limit", 3), "is a run folder: corpus and render options (--limit)"),
    ):
        result = run("sweep", base, *args, "--out", tmp_path / "bad")
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)


def test_a_page_image_turned_back_is_the_original(tmp_path):
    from mmconvert import imaging as transforms

    image = Image.new("L", (31, 17), 255)
    image.putpixel((3, 4), 0)
    turned, fill = transforms.rotate(image, 270)
    assert fill is None and turned.size == (17, 31)
    back, _ = transforms.rotate(turned, 90)
    assert back.tobytes() == image.tobytes()
    data = transforms.encode(back, "png", ppi=150)
    with Image.open(io.BytesIO(data)) as png:
        assert round(png.info["dpi"][0]) == 150


def test_a_changed_layout_is_refused_naming_it(tmp_path, csv_run):
    base = copy_run(csv_run, tmp_path / "base")  # one of its layouts is changed
    first = rows(base)[0]
    layout = base / first["layout"]["path"]
    layout.write_text(layout.read_text().replace('"A. ', '"A.  '))
    result = run("sweep", base, "--ppi", 72, "--out", tmp_path / "s")
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"Error: {base / 'manifest.jsonl'}: item {first['id']}: field layout.path: {layout} "
        "has changed since the run (sha256 differs)")


def test_a_sweep_rerun_leaves_sweep_json_byte_identical(tmp_path, csv_run):
    base = csv_run
    out = tmp_path / "s"
    assert run("sweep", base, "--scale", "0.5", "--out", out).exit_code == 0
    first = (out / "sweep.json").read_bytes()
    result = run("sweep", base, "--scale", "0.5", "--out", out)
    assert result.exit_code == 0 and "6 already done" in result.output
    assert (out / "sweep.json").read_bytes() == first
    assert json.loads(first)["items"] == 6


def test_a_style_field_sweep_draws_the_items_again_as_a_direct_render_would(tmp_path,
                                                                             occlusions):
    out = tmp_path / "s"
    result = run("sweep", "mmlu-redux", "--source", REDUX_CSV, "--limit", 3, "--out", out,
                 "--vary-style", "font_size:9,14", "--vary-style", "align:justify",
                 "--vary-style", "columns:2")
    assert result.exit_code == 0, result.output
    sweep = json.loads((out / "sweep.json").read_text())
    assert [v["name"] for v in sweep["variants"]] == ["font_size-9", "font_size-14",
                                                      "align-justify", "columns-2"]
    assert sweep["options"]["style"] == {"font_size": [9.0, 14.0], "align": ["justify"],
                                         "columns": [2.0]}
    direct = tmp_path / "direct"
    assert run("render", "mmlu-redux", "--source", REDUX_CSV, "--limit", 3, "--font-size", 9,
               "--out", direct).exit_code == 0
    swept, made = rows(out / "font_size-9"), rows(direct)
    assert [r["renderer"]["params"] for r in swept] == [r["renderer"]["params"] for r in made]
    for a, b in zip(swept, made, strict=True):
        assert [i["sha256"] for i in a["images"]] == [i["sha256"] for i in b["images"]]
        assert a["prompt"] == b["prompt"] and a["answer"] == b["answer"]
    assert all(r["renderer"]["params"]["columns"] == 2 for r in rows(out / "columns-2"))
    # a resumed sweep has nothing to do
    again = run("sweep", "mmlu-redux", "--source", REDUX_CSV, "--limit", 3, "--out", out,
                "--vary-style", "font_size:9,14", "--vary-style", "align:justify",
                "--vary-style", "columns:2")
    assert again.exit_code == 0 and "0 item image set(s) made" in again.output
    for args, message in (
            (("--vary-style", "font_sise:9"), "not a style field of the page renderer; did "
                                              "you mean 'font_size'?"),
            (("--vary-style", "font_size:99"), "--vary-style font_size:99.0: Input should be "
                                               "less than or equal to 72"),
            (("--vary-style", "ppi:150"), "style: ppi is swept by --ppi"),
            (("--vary-style", "font_size"), "--vary-style font_size: expected NAME:V1,V2")):
        bad = run("sweep", out / "font_size-9", *args, "--out", tmp_path / "bad")
        assert bad.exit_code == 2 and message in bad.output, bad.output
    other = run("sweep", occlusions, "--vary-style", "font_size:9", "--out", tmp_path / "o")
    assert other.exit_code == 2 and "which does not" in other.output
