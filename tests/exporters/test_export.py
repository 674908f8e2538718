"""``mmconvert export``: each format read back by the tool it is for, QA left-outs, bad input."""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from mmconvert.cli import main
from mmconvert.manifest import JsonlLog
from mmconvert.qa.events import event
from tests.conftest import FIXTURES, copy_run
from tests.typed import typed


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def rows(folder: Path) -> list[dict]:
    return JsonlLog(folder / "manifest.jsonl").read()


@pytest.fixture(scope="module")
def datasets_quiet():
    import datasets

    datasets.disable_progress_bars()
    return datasets


@pytest.fixture
def page_run(tmp_path, csv_run):
    """The session's six-item run, copied: a test here may add its QA events."""
    return copy_run(csv_run, tmp_path / "run")


@pytest.fixture
def reviewed(page_run):
    """Item 1 rejected by a reviewer, item 2 accepted, the rest pending."""
    ids = [r["id"] for r in rows(page_run)]
    JsonlLog(page_run / "qa.jsonl").append(
        event(ids[1], "reviewer:ana", "reject", "unreadable"),
        event(ids[2], "reviewer:ana", "accept", "ok"))
    return page_run, ids


def test_hf_parquet_reads_back_with_load_dataset(reviewed, tmp_path, datasets_quiet):
    run_dir, ids = reviewed
    out = tmp_path / "hf"
    result = run("export", run_dir, "--format", "hf", "--out", out)
    assert result.exit_code == 0, result.output
    assert "5 item(s) exported as hf" in result.output
    assert "left out by QA: 1 rejected" in result.output
    dataset = datasets_quiet.load_dataset("parquet", data_dir=str(out))["test"]
    manifest = {r["id"]: r for r in rows(run_dir)}
    assert dataset["id"] == [i for i in ids if i != ids[1]]
    for item in dataset:
        row = manifest[item["id"]]
        assert item["text_prompt"] == row["text_prompt"] and item["prompt"] == row["prompt"]
        assert item["options"] == row["options"] and item["answer"] == row["answer"]
        assert item["text_only_images"] == []
        assert [(im.width, im.height) for im in item["images"]] == [
            (img["width"], img["height"]) for img in row["images"]]
        assert json.loads(item["manifest_row"])["renderer"] == row["renderer"]
    raw = datasets_quiet.load_dataset("parquet", data_dir=str(out))["test"].cast_column(
        "images", datasets_quiet.List(datasets_quiet.Image(decode=False)))
    first = manifest[raw[0]["id"]]["images"][0]
    assert hashlib.sha256(raw[0]["images"][0]["bytes"]).hexdigest() == first["sha256"]
    # the card's configs let the folder load by itself too
    card = (out / "README.md").read_text()
    assert card.startswith("---\nconfigs:") and "left out by QA: 1 rejected" in card
    # what the rows recorded (the corpus chose options), and a load line for this folder
    assert '"render": "options"' in card and '"render": null' not in card
    assert f"datasets.load_dataset({str(out)!r})" in card
    assert datasets_quiet.load_dataset(str(out))["test"].num_rows == 5
    record = json.loads((out / "export.json").read_text())
    assert record["items"] == 5 and record["left_out"] == {"rejected": 1}


def test_accepted_only_leaves_out_pending_items(reviewed, tmp_path):
    run_dir, ids = reviewed
    result = run("export", run_dir, "--format", "jsonl", "--out", tmp_path / "j",
                 "--accepted-only")
    assert result.exit_code == 0
    assert "1 item(s) exported" in result.output
    assert "left out by QA: 4 pending, 1 rejected" in result.output
    assert [r["id"] for r in rows(tmp_path / "j")] == [ids[2]]


def test_an_item_only_ocr_flagged_is_exported_and_counted_as_awaiting_review(page_run,
                                                                              tmp_path):
    """Tesseract misreading a correct page ("III" as "Ill") marks the item for review: the
    export keeps it and says how many wait; a certain check (tofu) still leaves one out."""
    ids = [r["id"] for r in rows(page_run)]
    JsonlLog(page_run / "qa.jsonl").append(
        event(ids[0], "auto:ocr", "reject", "ocr_mismatch", {"cer": 0.24}),
        event(ids[1], "auto:ocr", "reject", "ocr_mismatch", {"cer": 0.3}),
        event(ids[1], "auto:text_layer", "reject", "tofu"))
    result = run("export", page_run, "--format", "jsonl", "--out", tmp_path / "j")
    assert result.exit_code == 0, result.output
    assert "5 item(s) exported" in result.output and "left out by QA: 1 rejected" in result.output
    assert "1 exported item(s) await review" in result.output
    assert [r["id"] for r in rows(tmp_path / "j")] == [ids[0], *ids[2:]]
    record = json.loads((tmp_path / "j" / "export.json").read_text())
    assert record["qa"]["awaiting_review"] == 1 and record["left_out"] == {"rejected": 1}
    summary = json.loads(run("qa", "summary", page_run, "--json").output)
    assert (summary["awaiting_review"], summary["rejected"], summary["pending"]) == (1, 1, 5)
    assert "awaiting review: 1" in run("qa", "summary", page_run).output


def test_hf_disk_is_the_save_to_disk_form(reviewed, tmp_path, datasets_quiet):
    run_dir, ids = reviewed
    assert run("export", run_dir, "--format", "hf-disk", "--out", tmp_path / "d").exit_code == 0
    dataset = datasets_quiet.load_from_disk(str(tmp_path / "d"))
    assert dataset["id"] == [i for i in ids if i != ids[1]]
    assert dataset[0]["images"][0].mode == "L"


def test_rows_span_several_shards_and_row_groups(page_run, tmp_path, datasets_quiet,
                                                 monkeypatch):
    import pyarrow.parquet as pq

    from mmconvert.exporters import hf
    from mmconvert.exporters.source import RunSource

    monkeypatch.setattr(hf, "ROW_GROUP_ROWS", 2)
    folder = tmp_path / "data"
    count = hf.write_parquet(RunSource(page_run), folder, shard_bytes=1)
    shards = sorted(p.name for p in folder.iterdir())
    assert count == 6 and shards == [f"test-0000{i}-of-00003.parquet" for i in range(3)]
    assert pq.ParquetFile(folder / shards[0]).metadata.num_row_groups == 1
    dataset = datasets_quiet.load_dataset("parquet", data_dir=str(tmp_path))["test"]
    assert dataset["id"] == [r["id"] for r in rows(page_run)]


def test_vlmevalkit_tsv(tmp_path):
    long_run = tmp_path / "long"
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "long-0", "context": "word " * 3000, "question": "Q?",
                                 "options": ["yes", "no", "maybe"], "answer": "B"}) + "\n"
                     + json.dumps({"id": "short-1", "context": "Short.", "question": "Q2?",
                                   "options": ["a", "b"], "answer": "A"}) + "\n")
    assert run("render", items, "--render", "context", "--out", long_run).exit_code == 0
    out = tmp_path / "v"
    assert run("export", long_run, "--format", "vlmevalkit", "--out", out,
               "--name", "ReadBenchLong").exit_code == 0
    table = pd.read_csv(out / "ReadBenchLong.tsv", sep="\t", keep_default_na=False)
    assert list(table.columns) == ["index", "image", "question", "A", "B", "C", "answer",
                                   "category", "id", "prompt", "text_prompt", "scoring"]
    assert table["index"].tolist() == [0, 1] and table["answer"].tolist() == ["B", "A"]
    assert table.loc[1, "C"] == "" and table.loc[0, "C"] == "maybe"
    manifest = rows(long_run)
    pages = ast.literal_eval(table.loc[0, "image"])  # several pages: a list, as the kit reads it
    assert isinstance(pages, list) and len(pages) == len(manifest[0]["images"]) > 1
    for encoded, image in zip(pages, manifest[0]["images"], strict=True):
        assert hashlib.sha256(base64.b64decode(encoded)).hexdigest() == image["sha256"]
    single = base64.b64decode(table.loc[1, "image"])
    assert single.startswith(b"\x89PNG")
    assert table.loc[0, "text_prompt"] == manifest[0]["text_prompt"]


def test_occlusion_exports_carry_the_text_only_image(tmp_path, datasets_quiet):
    occ = tmp_path / "occ"
    assert run("occlude", "captions", "--source", FIXTURES / "coco", "--limit", 2,
               "--out", occ).exit_code == 0
    assert run("export", occ, "--format", "hf", "--out", tmp_path / "hf").exit_code == 0
    dataset = datasets_quiet.load_dataset("parquet", data_dir=str(tmp_path / "hf"))["test"]
    assert all(len(r["images"]) == 1 and len(r["text_only_images"]) == 1 for r in dataset)
    assert dataset[0]["answers"] == rows(occ)[0]["answer"]
    assert run("export", occ, "--format", "vlmevalkit", "--out", tmp_path / "v").exit_code == 0
    table = pd.read_csv(tmp_path / "v" / "occ.tsv", sep="\t")
    assert "text_only_image" in table.columns
    assert base64.b64decode(table.loc[0, "text_only_image"]).startswith(b"\x89PNG")
    # a run.json that does not name its renderer (an older folder): the rows name it; no
    # default takes it for a page run
    info = json.loads((occ / "run.json").read_text())
    del info["config"]["renderer"]
    (occ / "run.json").write_text(json.dumps(info))
    assert run("export", occ, "--format", "vlmevalkit", "--out", tmp_path / "w").exit_code == 0
    assert "text_only_image" in pd.read_csv(tmp_path / "w" / "occ.tsv", sep="\t").columns


class TaskLoader(yaml.SafeLoader):
    """lmms-eval's YAML: ``!function utils.name`` names a function in utils.py."""


TaskLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def test_lmms_eval_task_loads_its_data_and_scores(reviewed, tmp_path, datasets_quiet):
    run_dir, ids = reviewed
    out = tmp_path / "task"
    assert run("export", run_dir, "--format", "lmms-eval", "--out", out,
               "--name", "redux demo").exit_code == 0
    task = yaml.load((out / "mmconvert_redux_demo.yaml").read_text(), Loader=TaskLoader)
    twin = yaml.load((out / "mmconvert_redux_demo_text.yaml").read_text(), Loader=TaskLoader)
    assert task["task"] == "mmconvert_redux_demo" and twin["task"] == "mmconvert_redux_demo_text"
    assert (task["doc_to_visual"], twin["doc_to_visual"]) == ("utils.doc_to_visual",
                                                               "utils.doc_to_visual_none")
    assert not (out / "mmconvert_redux_demo_text_image.yaml").exists()  # pages have no twin
    assert [m["metric"] for m in task["metric_list"]] == ["accuracy", "parsed"]
    dataset = datasets_quiet.load_dataset(task["dataset_path"],
                                          **task["dataset_kwargs"])[task["test_split"]]
    assert dataset.num_rows == 5
    spec = importlib.util.spec_from_file_location("utils", out / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    doc = dataset[0]
    assert [im.mode for im in utils.doc_to_visual(doc)] == ["RGB"]
    assert utils.doc_to_visual_none(doc) == [] and utils.doc_to_visual_twin(doc) == []
    assert utils.doc_to_text(doc) == doc["prompt"]
    assert utils.doc_to_text_twin(doc) == doc["text_prompt"]
    right, wrong = doc["answer"], "ABCD".replace(doc["answer"], "")[0]
    assert utils.process_results(doc, [f"Step by step... The answer is ({right})."]) == {
        "accuracy": 1.0, "parsed": 1.0}
    assert utils.process_results(doc, [f"Answer: {wrong}"]) == {"accuracy": 0.0,
                                                                  "parsed": 1.0}
    assert utils.process_results(doc, ["I cannot tell."]) == {"accuracy": 0.0, "parsed": 0.0}
    free = {"scoring": json.dumps({"kind": "free", "metric": "exact_match",
                                   "answers": ["the garden"], "extract": "answer_line"})}
    assert utils.process_results(free, ["Answer: The  Garden."])["accuracy"] == 1.0
    # a word that holds the answer is not the answer
    assert utils.process_results(free, ["Answer: the gardener"])["accuracy"] == 0.0


@pytest.mark.parametrize("paths", ["relative", "absolute"])
def test_jsonl_paths_point_at_the_run_images(page_run, tmp_path, paths):
    out = tmp_path / "exports" / "j"
    assert run("export", page_run, "--format", "jsonl", "--out", out,
               "--paths", paths).exit_code == 0
    exported = rows(out)
    assert [r["id"] for r in exported] == [r["id"] for r in rows(page_run)]
    for row in exported:
        for image in row["images"]:
            assert Path(image["path"]).is_absolute() == (paths == "absolute")
            path = out / image["path"]
            assert hashlib.sha256(path.read_bytes()).hexdigest() == image["sha256"]
        assert (out / row["layout"]["path"]).is_file()


def test_a_variant_leaves_out_what_its_base_rejected(reviewed, tmp_path):
    run_dir, ids = reviewed
    assert run("sweep", run_dir, "--scale", 0.5, "--out", tmp_path / "s").exit_code == 0
    result = run("export", tmp_path / "s" / "scale-0.5", "--format", "jsonl", "--out",
                 tmp_path / "j")
    assert "left out by QA: 1 rejected" in result.output
    assert ids[1] not in [r["id"] for r in rows(tmp_path / "j")]


def test_a_missing_image_stops_naming_it_or_is_recorded(page_run, tmp_path):
    gone = rows(page_run)[3]
    (page_run / gone["images"][0]["path"]).unlink()
    out = tmp_path / "hf"
    result = run("export", page_run, "--format", "hf", "--out", out)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {page_run / 'manifest.jsonl'} line 4: item {gone['id']}: field "
        f"images[0].path: {page_run / gone['images'][0]['path']} is missing\n")
    assert not out.exists() and not list(tmp_path.glob(".hf.partial*"))
    result = run("export", page_run, "--format", "hf", "--out", out, "--on-error", "skip")
    assert result.exit_code == 0
    assert "5 item(s) exported" in result.output and "1 skipped" in result.output
    skipped = JsonlLog(out / "export-skipped.jsonl").read()
    assert [(s["line"], s["id"]) for s in skipped] == [(4, gone["id"])]
    assert json.loads((out / "export.json").read_text())["skipped"] == 1


def test_a_changed_image_is_caught(page_run, tmp_path):
    first = rows(page_run)[0]
    path = page_run / first["images"][0]["path"]
    path.write_bytes(path.read_bytes() + b"\0")
    result = run("export", page_run, "--format", "vlmevalkit", "--out", tmp_path / "v")
    assert result.exit_code == 1 and "has changed since the run" in result.output


def test_a_row_that_does_not_parse_stops_naming_its_line_or_is_recorded(page_run, tmp_path):
    manifest = page_run / "manifest.jsonl"
    lines = manifest.read_text().splitlines(keepends=True)
    lines[2] = '{"id": "broken", "images": [\n'
    manifest.write_text("".join(lines))
    result = run("export", page_run, "--format", "jsonl", "--out", tmp_path / "j")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {manifest} line 3: not a JSON row (")
    result = run("export", page_run, "--format", "jsonl", "--out", tmp_path / "j",
                 "--on-error", "skip")
    assert result.exit_code == 0 and "5 item(s) exported" in result.output
    assert JsonlLog(tmp_path / "j" / "export-skipped.jsonl").read()[0]["line"] == 3


def test_an_existing_folder_needs_overwrite(page_run, tmp_path):
    out = tmp_path / "j"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    result = run("export", page_run, "--format", "jsonl", "--out", out)
    assert result.exit_code == 2 and "use --overwrite" in result.output
    assert (out / "mine.txt").exists()
    # --overwrite replaces an earlier export only, never a folder of the user's
    refused = run("export", page_run, "--format", "jsonl", "--out", out, "--overwrite")
    assert refused.exit_code == 2 and "is not an mmconvert export" in refused.output
    assert (out / "mine.txt").read_text() == "keep"
    (out / "mine.txt").unlink()
    assert run("export", page_run, "--format", "jsonl", "--out", out).exit_code == 0
    (out / "extra.txt").write_text("x")
    assert run("export", page_run, "--format", "jsonl", "--out", out,
               "--overwrite").exit_code == 0
    assert not (out / "extra.txt").exists() and (out / "manifest.jsonl").exists()


def test_an_export_never_replaces_the_folder_that_holds_its_source(page_run):
    parent = page_run.parent
    (parent / "export.json").write_text("{}")  # even one that looks like an export
    result = run("export", page_run, "--format", "jsonl", "--out", parent, "--overwrite")
    assert result.exit_code == 2 and "holds the run folder" in result.output
    assert (page_run / "manifest.jsonl").is_file()


def load_utils(folder: Path):
    spec = importlib.util.spec_from_file_location("utils", folder / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    return utils


@pytest.fixture(scope="module")
def occlusions(tmp_path_factory):
    occ = tmp_path_factory.mktemp("occ") / "occ"
    assert run("occlude", "captions", "--source", FIXTURES / "coco", "--all-captions",
               "--limit", 4, "--difficulty", "easy", "--ngram", "2", "--out", occ).exit_code == 0
    return occ


def test_lmms_eval_occlusions_score_span_by_span_with_two_distinct_twins(
        occlusions, tmp_path, datasets_quiet):
    out = tmp_path / "task"
    assert run("export", occlusions, "--format", "lmms-eval", "--out", out,
               "--name", "vcr").exit_code == 0
    tasks = {path.stem: yaml.load(path.read_text(), Loader=TaskLoader)
             for path in out.glob("*.yaml")}
    assert sorted(tasks) == ["mmconvert_vcr", "mmconvert_vcr_text", "mmconvert_vcr_text_image"]
    # the text-only image goes with the image prompt; the text prompt goes with no image
    assert (tasks["mmconvert_vcr_text_image"]["doc_to_visual"],
            tasks["mmconvert_vcr_text_image"]["doc_to_text"]) == ("utils.doc_to_visual_twin",
                                                                  "utils.doc_to_text")
    assert (tasks["mmconvert_vcr_text"]["doc_to_visual"],
            tasks["mmconvert_vcr_text"]["doc_to_text"]) == ("utils.doc_to_visual_none",
                                                            "utils.doc_to_text_twin")
    task = tasks["mmconvert_vcr"]
    assert task["process_results"] == "utils.process_spans"
    assert [(m["metric"], m["aggregation"]) for m in task["metric_list"]] == [
        ("exact_match", "utils.span_mean"), ("jaccard", "utils.span_mean")]
    dataset = datasets_quiet.load_dataset(task["dataset_path"],
                                          **task["dataset_kwargs"])[task["test_split"]]
    utils = load_utils(out)
    doc = next(d for d in dataset if len(d["answers"]) >= 2)
    assert "[___]" in utils.doc_to_text_twin(doc) and utils.doc_to_visual_none(doc) == []
    assert len(utils.doc_to_visual_twin(doc)) == 1
    spans = doc["answers"]
    # one span of several restored: its share, not 1.0
    one = utils.process_spans(doc, [spans[0]])
    assert one["exact_match"][0] == 1.0 and sum(one["exact_match"]) < len(spans)
    everything = utils.process_spans(doc, [" ".join(spans)])
    assert everything["exact_match"] == [1.0] * len(spans)
    assert utils.process_spans(doc, ["Sorry, I cannot read it. " + " ".join(spans)]) == {
        "exact_match": [0.0] * len(spans), "jaccard": [0.0] * len(spans)}
    # the same figures as mmconvert score vcr (official), averaged over spans
    from mmconvert.scoring.vcr import score_item

    ours = score_item(spans, spans[0], "en", protocol="official").spans
    assert one["jaccard"] == [s.jaccard for s in ours]
    assert utils.span_mean([[1.0, 0.0], [1.0]]) == pytest.approx(2 / 3)


def test_a_moved_lmms_eval_export_fails_loudly(page_run, tmp_path):
    out = tmp_path / "task"
    assert run("export", page_run, "--format", "lmms-eval", "--out", out).exit_code == 0
    load_utils(out)  # where it was exported: loads
    moved = tmp_path / "elsewhere"
    out.rename(moved)
    with pytest.raises(SystemExit, match=f"exported to {out} .* now in {moved}: export it "
                                         f"again with --out {moved}"):
        load_utils(moved)


def test_vlmevalkit_rows_as_the_kit_reads_them(occlusions, tmp_path):
    # occlusions: answer is every span, as a Python list literal (the kit's VCR scorer evaluates
    # it); question is the prompt, which the kit sends alone for a row without options
    assert run("export", occlusions, "--format", "vlmevalkit", "--out", tmp_path / "v",
               "--name", "VCR_MINE").exit_code == 0
    table = pd.read_csv(tmp_path / "v" / "VCR_MINE.tsv", sep="\t")
    manifest = rows(occlusions)
    for index, row in enumerate(manifest):
        assert ast.literal_eval(table.loc[index, "answer"]) == row["answer"]
        assert table.loc[index, "question"] == row["prompt"]
    assert max(len(r["answer"]) for r in manifest) > 1
    # BABILong: the question carries the instruction the model needs
    out = tmp_path / "babi"
    assert run("render", "babilong", "--source", FIXTURES / "babilong-raw", "--subset", "qa1",
               "--limit", 2, "--out", out).exit_code == 0
    assert run("export", out, "--format", "vlmevalkit", "--out", tmp_path / "vb",
               "--name", "BABI").exit_code == 0
    table = pd.read_csv(tmp_path / "vb" / "BABI.tsv", sep="\t")
    babi = rows(out)
    assert table.loc[0, "question"] == babi[0]["prompt"] != babi[0]["question"]
    assert babi[0]["question"] in table.loc[0, "question"]


def test_the_exported_inspect_task_runs_in_inspect_and_scores_as_eval(page_run, tmp_path,
                                                                      monkeypatch):
    """inspect_task.py of an hf export, run by inspect_ai itself against a local server: each
    item asked as its images, scored by the export's copy of the scorer, the same scores
    mmconvert eval gives the same replies."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from mmconvert.scoring.spec import score_row
    from tests.openai_server import FakeOpenAI

    out = tmp_path / "hf"
    assert run("export", page_run, "--format", "hf", "--out", out).exit_code == 0
    replies = {0: "Answer: A", 1: "The answer is (B).", 2: "A or B?"}
    fake = FakeOpenAI(answer=lambda body: replies[len(fake.requests("chat")) % 3],
                      models=("reader",))
    url = fake.start()
    try:
        model = get_model("openai-api/local/reader", base_url=url, api_key="none",
                          memoize=False)
        monkeypatch.chdir(out)  # inspect finds a task file by a relative path
        (log,) = inspect_eval("inspect_task.py", model=model,
                              log_dir=str(tmp_path / "logs"), display="none",
                              max_connections=1, task_args={"condition": "image"})
    finally:
        fake.stop()
    assert log.status == "success", log.error
    by_id = {row["id"]: row for row in rows(page_run)}
    assert len(log.samples) == len(by_id)
    for sample in log.samples:
        score = sample.scores["mmconvert_scorer"]
        expected = score_row(typed(by_id[sample.id]), sample.output.completion)
        assert (score.value, score.metadata["parsed"]) == (expected.value, expected.parsed)
    # the image condition sends the pages, and the prompt asks for a letter
    first = fake.requests("chat")[0].body["messages"][-1]["content"]
    assert any(part.get("type") == "image_url" for part in first)
