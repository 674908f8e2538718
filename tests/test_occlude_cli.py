"""``mmconvert occlude`` end to end on the COCO and COCO-CN fixtures."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import FIXTURES
from tests.test_cli import run

COCO = FIXTURES / "coco"
COCO_CN = FIXTURES / "coco-cn" / "coco-cn_ext.icap2020.txt"


def rows(folder):
    return [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]


def test_occlude_writes_both_images_and_a_recipe_row(tmp_path):
    out = tmp_path / "vcr"
    result = run("occlude", "captions", "--source", COCO, "--out", out, "--difficulty", "hard")
    assert result.exit_code == 0, result.output
    assert f"2 item(s) rendered (4 image(s)) into {out}" in result.output
    row = rows(out)[0]
    assert [image["role"] for image in row["images"]] == ["stacked", "text_only"]
    for image in row["images"]:
        data = (out / image["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == image["sha256"]
        assert image["width"] == 300
    assert row["difficulty"] == "hard" and row["language"] == "en"
    assert row["font"] == "Liberation Sans" and row["ner"].startswith("en_core_web_sm")
    assert row["renderer"]["name"] == "occlude" and row["renderer"]["params"]["band_rows"]
    for span in row["masked_spans"]:
        assert row["caption"][span["start"]:span["end"]] == span["text"]
    assert row["answer"] == [s["text"] for s in row["masked_spans"]]
    assert row["source_image"].endswith(".jpg") and row["metadata"]["license"]
    assert "[___]" in row["text_prompt"] and "covered" in row["prompt"]
    info = json.loads((out / "run.json").read_text())
    assert info["config"]["renderer"] == "occlude"
    assert "Liberation Sans" in [f["name"] for f in info["fonts"]]
    again = run("occlude", "captions", "--source", COCO, "--out", out, "--difficulty", "hard")
    assert "0 item(s) rendered (0 image(s))" in again.output and "2 already done" in again.output


def test_output_is_the_same_for_any_number_of_workers(tmp_path):
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        result = run("occlude", "captions", "--source", COCO, "--all-captions", "--out", out,
                     "--difficulty", "mixed", "--workers", workers, "--seed", 7,
                     "--on-error", "skip")
        assert result.exit_code == 0, result.output
        images = sorted((p.name, p.read_bytes()) for p in (out / "images").iterdir())
        assert len(rows(out)) == 10
        outputs.append(((out / "manifest.jsonl").read_bytes(), images))
    assert outputs[0] == outputs[1]


def test_pairs_over_the_height_limit_are_dropped_and_recorded(tmp_path):
    out = tmp_path / "short"
    result = run("occlude", "captions", "--source", COCO, "--out", out, "--max-height", 200)
    assert result.exit_code == 0, result.output
    assert "0 item(s) rendered" in result.output
    assert "2 left out by a rule (2 over --max-height; see skipped.jsonl)" in result.output
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [s["stage"] for s in skipped] == ["filter", "filter"]
    assert "is over --max-height 200" in skipped[0]["reason"]


@pytest.fixture
def pairs(tmp_path):
    good = COCO / "val2017" / "000000229358.jpg"
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(good.read_bytes()[:15000])
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(f"image\tcaption\n{good}\tA man standing in front of a mirror in a room.\n"
                   f"{broken}\tA man standing in front of a mirror in a room.\n",
                   encoding="utf-8")
    return tsv


def test_a_broken_image_stops_the_run_with_one_line(tmp_path, pairs):
    result = run("occlude", "captions", "--source", pairs, "--out", tmp_path / "o")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {pairs} line 3: field image: truncated or damaged "
                                    "image (")
    assert result.output.count("\n") == 1


def test_a_broken_image_is_skipped_and_recorded(tmp_path, pairs):
    out = tmp_path / "o"
    result = run("occlude", "captions", "--source", pairs, "--out", out, "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert "1 item(s) rendered" in result.output and "1 skipped" in result.output
    (skip,) = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert skip["id"] == "pairs-0001" and skip["stage"] == "render"
    assert "truncated or damaged image" in skip["reason"]


def test_option_errors_are_one_line(tmp_path):
    result = run("occlude", "captions", "--source", COCO, "--out", tmp_path / "a",
                 "--font", "Comic Nue")
    assert result.exit_code == 2
    assert result.output == ("Error: unknown font 'Comic Nue' (shipped: Liberation Sans, "
                             "Liberation Serif, Comic Neue, Ubuntu, FiraGO, Noto Sans, Droid "
                             "Sans Fallback); did you mean 'Comic Neue'?\n")
    result = run("occlude", "captions", "--source", COCO, "--out", tmp_path / "b",
                 "--style", "hidden", "--width", 400)
    assert result.exit_code == 2
    assert result.output == ("Error: width is drawn per item in the hidden style; leave it "
                             "unset\n")


def test_chinese_captions_from_coco_cn(tmp_path):
    out = tmp_path / "zh"
    result = run("occlude", "captions", "--source", COCO_CN, "--out", out)
    assert result.exit_code == 0, result.output
    (row,) = rows(out)
    assert row["language"] == "zh" and row["ner"] == "none"
    assert row["renderer"]["params"]["ner"] is False  # as it ran: no Chinese entity model
    assert row["caption"] == "一群人围坐在有一个生日蛋糕的桌子旁"
    assert row["metadata"] == {"coco_cn_name": "COCO_train2014_000000000790#0", "image_id": 790}
    assert row["font"] == "Droid Sans Fallback" and "白色横条" in row["prompt"]
    assert all(len(span["text"]) == 5 for span in row["masked_spans"])


def test_pairs_in_parquet_are_drawn_from_photos_the_workers_read(tmp_path):
    """VCR-wiki's layout: the photos' bytes in a Parquet column. The driver reads the captions
    only; each worker reads the photos of its items (a row group at a time)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mmconvert.renderers.occlude import CaptionOccluder
    from tests.conftest import make_item

    photos = sorted((COCO / "val2017").glob("*.jpg"))
    captions = ["A man standing in front of a mirror in a small bright room with a lamp.",
                "Two people walk along a sandy beach beside the calm blue sea at sunset.",
                "A man standing in front of a mirror in a small bright room with a lamp."]
    folder = tmp_path / "vcr" / "default"
    folder.mkdir(parents=True)
    cells = [{"bytes": photos[n % len(photos)].read_bytes(), "path": "x.jpg"} for n in range(3)]
    cells[2] = {"bytes": None, "path": None}  # a row with no image
    pq.write_table(pa.table({"image": cells, "caption": captions}),
                   folder / "test-00000-of-00001.parquet", row_group_size=2)
    outputs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        result = run("occlude", "captions", "--source", tmp_path / "vcr", "--out", out,
                     "--workers", workers, "--on-error", "skip")
        assert result.exit_code == 0, result.output
        assert "2 item(s) rendered" in result.output and "1 skipped" in result.output
        outputs[workers] = sorted((p.name, p.read_bytes()) for p in (out / "images").iterdir())
    assert outputs[1] == outputs[2]
    (skip,) = [json.loads(line) for line in (tmp_path / "w1" / "skipped.jsonl").read_text()
               .splitlines()]
    assert skip["stage"] == "render" and "row 2: field image: no image data" in skip["reason"]
    # the same pixels as an item that carries its photo's bytes
    row = rows(tmp_path / "w1")[0]
    alone = CaptionOccluder().render(make_item(id=row["id"], subset=row["subset"],
                                               corpus="captions", context=captions[0],
                                               image=photos[0].read_bytes()), 0)
    assert (tmp_path / "w1" / row["images"][0]["path"]).read_bytes() == alone.stacked
    result = run("occlude", "captions", "--source", tmp_path / "vcr", "--out", tmp_path / "f")
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "test-00000-of-00001.parquet row 2: field image: no image data" in result.output


def coco_with(tmp_path, captions):
    """The COCO fixture with ``captions`` added to its first image."""
    root = tmp_path / "coco"
    import shutil

    shutil.copytree(COCO, root)
    path = root / "annotations" / "captions_val2017.json"
    data = json.loads(path.read_text())
    first = data["annotations"][0]["image_id"]
    for n, caption in enumerate(captions):
        data["annotations"].insert(0, {"id": 900 + n, "image_id": first, "caption": caption})
    path.write_text(json.dumps(data))
    return root


def test_a_limit_counts_items_made_and_each_drop_names_its_rule(tmp_path):
    """--limit 7 with --all-captions: the second image's first two captions leave nothing to
    cover (too short; no 5-gram of plain words) and are recorded with those reasons, not as a
    limit's drops, and do not use up the limit; neither stops the run."""
    root = coco_with(tmp_path, ["A bowl full of chinese food with a fork",
                                "A red bus parked by the road."])
    out = tmp_path / "vcr"
    result = run("occlude", "captions", "--source", root, "--all-captions", "--limit", 7,
                 "--out", out)
    assert result.exit_code == 0, result.output
    assert f"7 item(s) rendered (14 image(s)) into {out}" in result.output
    assert "2 left out by a rule (1 no 5-gram of plain words, 1 too short; see " \
           "skipped.jsonl)" in result.output
    assert len(rows(out)) == 7
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [s["stage"] for s in skipped] == ["filter", "filter"]
    assert "too short" in skipped[0]["reason"]
    assert "no 5-gram of plain words" in skipped[1]["reason"]
    # the same run again: finished, nothing redone
    again = run("occlude", "captions", "--source", root, "--all-captions", "--limit", 7,
                "--out", out)
    assert again.exit_code == 0 and "0 item(s) rendered" in again.output, again.output
    assert "9 already done" in again.output  # 7 made, 2 left out by a rule
    # two workers make the same seven items
    two = tmp_path / "two"
    assert run("occlude", "captions", "--source", root, "--all-captions", "--limit", 7,
               "--workers", 2, "--out", two).exit_code == 0
    assert (two / "manifest.jsonl").read_bytes() == (out / "manifest.jsonl").read_bytes()
