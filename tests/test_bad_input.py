"""No traceback on any input: each of these is one line naming the file, line and field (and a
recorded skip with --on-error skip), never a Python traceback."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import FIXTURES, SAMPLE
from tests.test_cli import run

GOOD = {"question": "Fine?", "options": ["yes", "no"], "answer": "A"}


def jsonl(path, *lines: str):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def one_line_error(result, start: str, *, notes: int = 0) -> None:
    """The command failed with one ``Error:`` line (after ``notes`` lines of the load's
    notes) and no traceback."""
    assert result.exit_code != 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == notes + 1 and "Traceback" not in result.output, result.output
    assert lines[-1].startswith(f"Error: {start}"), result.output


@pytest.mark.parametrize(("line", "message"), [
    ('{"question": "Q?", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "JSON nested too deep"),
    ('{"question": "Q?", "n": ' + "9" * 5000 + "}", "a number of more than 4300 digits"),
    ('{"question": "Q\\ud800?", "options": ["a", "b"], "answer": "A"}',
     "field question: a lone surrogate U+D800 at character 1"),
    ('{"question": "Q?", "options": ["a", "b"], "answer": "A", "note": "x\\udfff"}',
     "field metadata.note: a lone surrogate U+DFFF"),
    ('{"question": "Q?", "options": "' + "[" * 50_000 + '", "answer": "A"}',
     "field options: JSON nested too deep"),
])
def test_hostile_jsonl_rows_are_one_line_or_a_recorded_skip(tmp_path, line, message):
    source = jsonl(tmp_path / "items.jsonl", json.dumps(GOOD), line)
    out = tmp_path / "run"
    result = run("render", source, "--out", out)
    one_line_error(result, f"{source} line 2: ")
    assert message in result.output
    assert not (out / "images").exists() or not any((out / "images").iterdir())
    result = run("render", source, "--out", out, "--on-error", "skip")
    assert result.exit_code == 0 and "1 item(s) rendered" in result.output, result.output
    skipped = [json.loads(x) for x in (out / "skipped.jsonl").read_text().splitlines()]
    assert len(skipped) == 1 and message in skipped[0]["reason"]
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_parquet_timestamp_binary_and_decimal_columns_are_kept_as_text(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "items.parquet"
    pq.write_table(pa.table({
        "question": ["Q?"], "options": [["a", "b"]], "answer": ["A"],
        "when": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5)], pa.timestamp("us")),
        "blob": pa.array([b"\x00\xffraw"], pa.binary()),
        "text_blob": pa.array([b"plain"], pa.binary()),
        "price": pa.array([decimal.Decimal("1.25")], pa.decimal128(5, 2)),
        "day": pa.array([datetime.date(2024, 1, 2)], pa.date32())}), source)
    out = tmp_path / "run"
    result = run("render", source, "--out", out)
    assert result.exit_code == 0, result.output
    row = json.loads((out / "manifest.jsonl").read_text())
    assert row["metadata"] == {"when": "2024-01-02T03:04:05", "blob": "base64:AP9yYXc=",
                               "text_blob": "plain", "price": "1.25", "day": "2024-01-02"}


def test_coco_images_that_are_not_objects(tmp_path):
    coco = tmp_path / "coco"
    shutil.copytree(FIXTURES / "coco", coco)
    path = coco / "annotations" / "captions_val2017.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["images"] = ["not an object", [1, 2], *data["images"], {"id": [3]}]
    data["annotations"].append({"image_id": {"x": 1}, "caption": "odd"})
    path.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "run"
    result = run("occlude", "captions", "--source", coco, "--out", out, "--no-ner")
    one_line_error(result, f"{path} images[0]: not a COCO image")
    result = run("occlude", "captions", "--source", coco, "--out", out, "--no-ner",
                 "--on-error", "skip")
    assert result.exit_code == 0 and "2 item(s) rendered" in result.output, result.output
    assert len((out / "skipped.jsonl").read_text().splitlines()) == 3


def test_bad_csv_headers_and_terminal_escapes(tmp_path):
    dup = tmp_path / "dup.csv"
    dup.write_text('question,options,answer,answer\nQ?,"[""a"",""b""]",A,B\n', encoding="utf-8")
    one_line_error(run("render", dup, "--out", tmp_path / "a"),
                   f"{dup} line 1: column 'answer' appears 2 times in the header")
    esc = tmp_path / "esc.csv"
    esc.write_text('question,\x1b]0;PWNED\x07x\nQ?,y\n', encoding="utf-8")
    result = run("render", esc, "--out", tmp_path / "b")
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b]0;PWNED\\x07x" in result.output


def test_workers_below_zero_is_a_usage_error(tmp_path):
    source = jsonl(tmp_path / "items.jsonl", json.dumps(GOOD))
    result = run("render", source, "--workers", "-1", "--out", tmp_path / "run")
    assert result.output == ("Error: --workers: Input should be greater than or equal to 0 "
                             "(got -1)\n")
    assert result.exit_code == 2
    import mmconvert
    from mmconvert.errors import UsageError

    with pytest.raises(UsageError, match="workers: Input should be greater than or equal to 0"):
        mmconvert.convert({"corpus": str(source)}, out=tmp_path / "run", workers=-1)


def test_wrong_groundtruth_without_a_usable_answer_is_recorded_not_kept(tmp_path):
    """The release's abstract_algebra has a wrong_groundtruth row whose correct_answer is
    empty: with --keep-flagged it used to keep the answer known to be wrong."""
    out = tmp_path / "run"
    result = run("render", "mmlu-redux", "--source", FIXTURES / "mmlu-redux", "--keep-flagged",
                 "--subset", "abstract_algebra", "--out", out)
    assert result.exit_code == 0, result.output
    skipped = [json.loads(x) for x in (out / "skipped.jsonl").read_text().splitlines()]
    assert [s["stage"] for s in skipped] == ["filter"]
    assert "field correct_answer: wrong_groundtruth with correct_answer ''" in \
        skipped[0]["reason"]


def test_mmlu_pro_rows_with_more_than_ten_options(tmp_path):
    import pyarrow.parquet as pq

    pro = tmp_path / "pro" / "data"
    pro.mkdir(parents=True)
    table = pq.read_table(FIXTURES / "mmlu-pro" / "data" / "test-00000-of-00001.parquet")
    rows = table.to_pylist()
    rows[0]["options"] = [f"option {n}" for n in range(11)]
    pq.write_table(type(table).from_pylist(rows, schema=table.schema),
                   pro / "test-00000-of-00001.parquet")
    result = run("render", "mmlu-pro", "--source", pro.parent, "--out", tmp_path / "run")
    one_line_error(result, str(pro / "test-00000-of-00001.parquet"))
    assert "field options: 11 options; MMLU-Pro has at most 10" in result.output


def mounted(tmp_path, name: str, options: str):
    target = tmp_path / name
    target.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                          capture_output=True)
    if done.returncode != 0:
        if os.environ.get("CI"):
            raise RuntimeError(f"mount failed in CI: {done.stderr.decode()}")
        pytest.skip("cannot mount a tmpfs here (not root)")
    return target


@pytest.fixture
def tmpfs(tmp_path):
    made = []

    def make(name, options):
        made.append(mounted(tmp_path, name, options))
        return made[-1]

    yield make
    for target in made:
        subprocess.run(["umount", str(target)], check=False)


def test_a_read_only_folder_and_a_full_disk_are_one_line(tmp_path, tmpfs):
    read_only = tmpfs("ro", "ro,size=1m")
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", read_only / "run")
    one_line_error(result, f"{read_only / 'run'}: cannot write: Read-only file system",
                   notes=1)
    full = tmpfs("full", "size=32k")
    out = full / "run"
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--out", out)
    one_line_error(result, f"{out}/", notes=1)
    assert "No space left on device (the disk is full)" in result.output
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    for line in (out / "manifest.jsonl").read_text().splitlines():
        json.loads(line)  # no torn row


def test_an_item_too_large_to_draw_is_refused_before_drawing(tmp_path):
    source = jsonl(tmp_path / "long.jsonl", json.dumps(
        {"question": "Which?", "context": "lantern harbour meadow archive " * 8000}))
    result = run("render", source, "--ppi", "1200", "--out", tmp_path / "run")
    one_line_error(result, f"{source} line 1: field ppi: ")
    assert "megapixel limit of one item; lower --ppi" in result.output
    assert run("render", source, "--out", tmp_path / "ok").exit_code == 0  # 92.9 PPI fits
    result = run("sweep", tmp_path / "ok", "--ppi", "1200", "--out", tmp_path / "s")
    assert result.exit_code == 1 and "megapixel limit of one item" in result.output


def test_a_huge_png_photo_is_reduced_right_after_decoding(tmp_path):
    import numpy as np
    from PIL import Image

    from mmconvert.renderers.photo import REDUCE_ABOVE, decode_photo, open_image

    pixels = np.zeros((4000, 4200, 3), dtype=np.uint8)
    pixels[:, 2100:] = (200, 30, 30)
    path = tmp_path / "big.png"
    Image.fromarray(pixels).save(path, compress_level=0)
    assert 4000 * 4200 > REDUCE_ABOVE
    photo = decode_photo(open_image(path, "x", 50_000_000), 300, "x")
    assert photo.size == (300, 286)
    assert photo.getpixel((10, 10)) == (0, 0, 0) and photo.getpixel((290, 10)) == (200, 30, 30)


@pytest.mark.parametrize(("content", "message"), [
    (b"page: 5\n", "page: expected a mapping of option names to values (got 5)"),
    (b"page: [1, 2]\n", "page: expected a mapping of option names to values (got [1, 2])"),
    (b"dedup: 5\n", "dedup: expected a mapping of option names to values (got 5)"),
    (b"\xff\xfepage: 1\n", "not UTF-8 text (byte 0)"),
    (b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n",
     "nested deeper than the 32 levels an options file may hold"),
    (b"pgae: {ppi: 72}\n", "pgae: Extra inputs are not permitted; did you mean 'page'?"),
    (b"page: {ppii: 72}\n", "page.ppii: Extra inputs are not permitted (got 72); did you "
                            "mean 'ppi'?"),
    (b"page: {page_width: 1.2, margin: 0.7}\n",
     "page: a 1.2 x 11.69 in page with 0.7 in margins leaves 0.0 x 740.9 pt for text, too "
     "little for 12 pt type"),
])
def test_hostile_yaml_configs_are_one_line_naming_the_file(tmp_path, content, message):
    config = tmp_path / "c.yaml"
    config.write_bytes(content)
    result = run("render", "mmlu-redux", "--source", SAMPLE, "--config", config, "--out",
                 tmp_path / "out")
    one_line_error(result, f"--config {config}: {message}")


@pytest.mark.parametrize(("args", "message"), [
    (("render", "mmlu-redux", "--source", SAMPLE, "--ppi", "10"),
     "--ppi: 10 is not a PPI over 10 and at most 1200 (got 10.0)"),
    (("sweep", "RUN", "--ppi", "10"), "--ppi: 10 is not a PPI over 10 and at most 1200 "
                                      "(got 10.0)"),
    (("sweep", "RUN", "--ppi", "nan"), "--ppi: Input should be a finite number (got nan)"),
    (("sweep", "RUN", "--rotate", "nan"), "--rotate: Input should be a finite number"),
    (("sweep", "RUN", "--rotate", "inf"), "--rotate: Input should be a finite number"),
    (("transform", "RUN", "--apply", "rotate:nan"),
     "--apply rotate:nan: degrees: Input should be a finite number"),
    (("render", "mmlu-redux", "--source", SAMPLE, "--limit", str(2 ** 70)),
     "--limit: Input should be less than or equal to 9223372036854775807"),
    (("render", "mmlu-redux", "--source", SAMPLE, "--sample", str(2 ** 70)),
     "--sample: Input should be less than or equal to 9223372036854775807"),
])
def test_one_rule_one_message_and_no_number_too_large(tmp_path, sample_run, args, message):
    """The PPI rule is one, with one message, for render and sweep; a limit past sys.maxsize
    is a flag error, not an overflow."""
    args = tuple(str(sample_run) if a == "RUN" else a for a in args)
    one_line_error(run(*args, "--out", tmp_path / "out"), message)


# --- issue 53's attack run: recipes, the in-memory API, the training transform -------------

@pytest.mark.parametrize("name, text, message", [
    ("deep", "name: x\noptions: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
     "not a YAML recipe (nested deeper than the 32 levels an options file may hold)"),
    ("tag", "name: x\noptions: !!python/object/apply:os.system ['echo hi']\n",
     "not a YAML recipe (not valid YAML (could not determine a constructor for the tag "
     "'tag:yaml.org,2002:python/object/apply:os.system'"),
    pytest.param("steps", "name: x\ntransforms: [" + ", ".join(["blur:1"] * 100000) + "]\n",
                 "transforms: 100,000 steps; at most 64", marks=pytest.mark.slow)])
def test_hostile_recipe_files_are_one_line(tmp_path, name, text, message):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    result = run("recipe", "verify", path)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_a_huge_sparse_recipe_is_refused_unread(tmp_path):
    import time

    from mmconvert.errors import UsageError
    from mmconvert.recipes import load_recipe

    path = tmp_path / "sparse.yaml"
    with open(path, "wb") as handle:
        handle.truncate(6 << 30)
    started = time.perf_counter()
    with pytest.raises(UsageError, match="larger than 1048576 bytes; not a recipe"):
        load_recipe(path)
    assert time.perf_counter() - started < 1


def test_the_in_memory_api_and_the_transform_refuse_in_one_line(tmp_path):
    import mmconvert
    from mmconvert.errors import MMConvertError, UsageError
    from mmconvert.recipes import load_recipe

    deep: dict = {}
    inner = deep
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(MMConvertError, match="field metadata: nested deeper than 64 levels"):
        load_recipe("readbench").render({"question": "q", "metadata": deep})
    with pytest.raises(MMConvertError, match="field metadata: nested deeper than 64 levels"):
        mmconvert.convert({"corpus": "items"}, items=[{"question": "q", "metadata": deep}],
                          out=tmp_path / "deep", progress=False, log=lambda m: None)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="a file, not a folder for the run"):
        mmconvert.convert({"corpus": "items"}, items=[GOOD], out=tmp_path / "file",
                          progress=False)
    with pytest.raises(UsageError, match="recipe glyph is drawn by the page renderer, not "
                                         "document"):
        mmconvert.convert({"renderer": "document"}, items=[GOOD], recipe="glyph",
                          out=tmp_path / "mix", progress=False)
    transform = load_recipe("readbench").transform()
    with pytest.raises(UsageError, match=r"columns are lists of one length \(question: 2, "
                                         r"context: 1\)"):
        transform({"question": ["a", "b"], "context": ["x"]})
    with pytest.raises(UsageError, match="a batch is a mapping of column names"):
        transform(["not", "a", "mapping"])


def test_with_a_limit_the_rows_past_it_are_not_read(tmp_path):
    """--limit 3 of a split of 300,000 lm-eval docs read every doc (over 300 s): with a limit
    and no sample the first pass stops at the limit, so a bad row past it is never met."""
    items = jsonl(tmp_path / "items.jsonl", *[json.dumps({**GOOD, "id": f"a{n}"})
                                              for n in range(3)], "{not json")
    result = run("render", items, "--limit", 2, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "out" / "manifest.jsonl").read_text().splitlines()) == 2
    result = run("render", items, "--out", tmp_path / "all")
    assert result.exit_code != 0 and "line 4" in result.output
