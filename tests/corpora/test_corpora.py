"""Every seed corpus loads from a local copy in its real (or hub) format."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter

import pytest

from mmconvert.corpora import CORPORA, LoadReport, resolve
from mmconvert.corpora.base import load_request
from mmconvert.corpora.choices import shuffle_options
from mmconvert.errors import ItemError, SourceError
from tests.conftest import FIXTURES, make_item


def load(name, **request):
    report = LoadReport()
    corpus = resolve(name)
    items = list(corpus.load(load_request(corpus, request), report))  # may be read lazily
    return items, report


def test_every_seed_corpus_is_registered():
    assert set(CORPORA.names()) >= {
        "mmlu", "mmlu-redux", "mmlu-pro", "gpqa", "babilong", "longbench", "logiqa", "logiqa2",
        "cmmlu", "ceval-zhtw", "tmmluplus", "captions"}
    for name in CORPORA.names():
        assert CORPORA.get(name).description


# --- MMLU, MMLU-Pro ------------------------------------------------------------------------


def test_mmlu_release_csvs_and_hub_parquet_give_the_same_items():
    raw, _ = load("mmlu", source=FIXTURES / "mmlu" / "data")
    hub, _ = load("mmlu", source=FIXTURES / "mmlu" / "hub")
    assert [i.id for i in raw] == [i.id for i in hub] == [
        "astronomy-000", "astronomy-001", "astronomy-002", "astronomy-003",
        "world_religions-000", "world_religions-001", "world_religions-002"]
    for a, b in zip(raw, hub, strict=True):
        assert (a.question, a.options, a.answer) == (b.question, b.options, b.answer)
    assert raw[4].question.startswith(" ")  # world_religions' leading space survives


def test_mmlu_dev_split_and_short_row(tmp_path):
    dev, _ = load("mmlu", source=FIXTURES / "mmlu" / "data", split="dev")
    assert len(dev) == 5 and dev[0].split == "dev"
    bad = tmp_path / "test" / "astronomy_test.csv"
    bad.parent.mkdir()
    bad.write_text('"Q?",a,b,c,A\n', encoding="utf-8")
    with pytest.raises(ItemError, match=r"astronomy_test.csv line 1: 5 fields; an MMLU "):
        load("mmlu", source=tmp_path)


def test_mmlu_pro_groups_by_category_with_native_ids():
    items, _ = load("mmlu-pro", source=FIXTURES / "mmlu-pro" / "data")
    assert Counter(i.subset for i in items) == {"math": 2, "law": 2, "computer_science": 2}
    first = items[0]
    assert first.id == f"{first.subset}-{first.metadata['question_id']}"
    assert 3 <= len(first.options) <= 10 and first.answer in "ABCDEFGHIJ"


def test_mmlu_pro_padding_of_the_old_revision_is_removed(tmp_path):
    row = {"question_id": 5, "question": "2+2?", "options": ["3", "4"] + ["N/A"] * 8,
           "answer": "B", "answer_index": 1, "cot_content": "", "category": "math",
           "src": "x"}
    (tmp_path / "test.jsonl").write_text(json.dumps(row) + "\n")
    (item,), _ = load("mmlu-pro", source=tmp_path / "test.jsonl")
    assert item.options == ["3", "4"] and item.metadata["padding_removed"] == 8


def test_mmlu_pro_answer_outside_options_names_the_row(tmp_path):
    row = {"question_id": 5, "question": "2+2?", "options": ["3", "4"], "answer": "E",
           "answer_index": 4, "category": "math"}
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ItemError) as err:
        load("mmlu-pro", source=path)
    assert str(err.value) == (f"{path} line 1: field answer: 'E' is not one of the 2 options "
                              "(expected a letter A-B or an index 0-1 of the 2 options)")
    items, report = load("mmlu-pro", source=path, on_error="skip")
    assert items == [] and report.skipped[0]["id"] == "math-000"


# --- GPQA ----------------------------------------------------------------------------------


def test_gpqa_shuffles_stably_per_record_and_run_seed():
    items, _ = load("gpqa", source=FIXTURES / "gpqa")
    again, _ = load("gpqa", source=FIXTURES / "gpqa")
    assert [i.options for i in items] == [i.options for i in again]
    first = items[0]
    assert first.id == "gpqa_diamond-recFix0001AAAAAAA"
    assert first.options[ord(first.answer) - 65] == "2 s"  # stray whitespace stripped
    assert sorted(first.options) == sorted(["2 s", "1 s", "4 s", "20 s"])
    assert first.metadata["original_answer"] == "A"
    assert first.metadata["original_options"][0] == "2 s"
    other_seeds = [load("gpqa", source=FIXTURES / "gpqa", seed=s)[0] for s in range(1, 6)]
    assert any(o[0].options != first.options for o in other_seeds)


def test_gpqa_answer_letters_are_uniform(tmp_path):
    path = tmp_path / "gpqa_diamond.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["Question", "Correct Answer", "Incorrect Answer 1",
                         "Incorrect Answer 2", "Incorrect Answer 3", "Record ID"])
        for n in range(800):
            writer.writerow([f"Q{n}?", "right", "w1", "w2", "w3", f"rec{n:05d}"])
    items, _ = load("gpqa", source=path)
    counts = Counter(i.answer for i in items)
    assert set(counts) == set("ABCD")
    assert all(150 <= c <= 250 for c in counts.values()), counts  # 200 ± 3.5 sd


def test_gpqa_missing_columns_are_named(tmp_path):
    path = tmp_path / "gpqa_diamond.csv"
    path.write_text("Question,Correct Answer\nQ?,A\n", encoding="utf-8")
    with pytest.raises(SourceError) as err:
        load("gpqa", source=path)
    assert str(err.value).startswith(
        f"{path}: missing column(s) Incorrect Answer 1, Incorrect Answer 2, Incorrect Answer 3, "
        "Record ID (gpqa expects ")


# --- BABILong ------------------------------------------------------------------------------


def test_babilong_raw_babi_files_are_the_0k_config():
    items, _ = load("babilong", source=FIXTURES / "babilong-raw")
    first = items[0]
    assert first.id == "0k-qa1-000" and first.split == "qa1" and first.subset == "0k-qa1"
    assert first.context == "John travelled to the hallway. Mary journeyed to the bathroom."
    assert first.question == "Where is John?" and first.answer == ["hallway"]
    # the second question of a story sees every fact before it, not the first question
    assert items[1].context.startswith(first.context + " ") and "?" not in items[1].context
    qa8 = [i for i in items if i.split == "qa8"]
    assert qa8 and all(i.metadata["task"] == "qa8" for i in qa8)
    assert any("," in i.answer[0] or i.answer[0] == "nothing" for i in qa8)


def test_babilong_subset_names_a_length_a_task_or_both():
    items, _ = load("babilong", source=FIXTURES / "babilong-raw", subsets=["qa8"])
    assert {i.subset for i in items} == {"0k-qa8"}
    with pytest.raises(SourceError, match=r"no rows for 4k-qa1 \(raw bAbI files are the 0k "):
        load("babilong", source=FIXTURES / "babilong-raw", subsets=["4k"])
    with pytest.raises(SourceError, match="unknown subset 'qa11'"):
        load("babilong", source=FIXTURES / "babilong-raw", subsets=["qa11"])


def test_babilong_hub_layouts():
    items, _ = load("babilong", source=FIXTURES / "babilong-hub")
    assert [i.id for i in items] == ["0k-qa1-000", "0k-qa1-001", "1k-qa2-000"]
    assert items[2].answer == ["kitchen"] and len(items[2].context) > 500


# --- LongBench -----------------------------------------------------------------------------


def test_longbench_bins_and_keeps_below_8k_in_english_by_default():
    items, report = load("longbench", source=FIXTURES / "longbench")
    assert [i.metadata["length_bin"] for i in items if i.subset == "hotpotqa_e"] == [
        "0-512", "512-1k", "1k-2k", "4k-8k"]
    assert report.dropped == {"length>=8192": 1}  # multifieldqa_zh is not a default config
    assert any("dropped 1 of" in n and "--max-length" in n for n in report.notes)
    first = items[0]
    assert first.id == f"hotpotqa_e-{1:048x}" and first.question == "Which place has the archive?"
    assert first.context.startswith("Passage 1:\nPlace 1\n") and first.answer == ["Place 1"]
    assert resolve("longbench").group(first) == "hotpotqa_e/0-512"


def test_longbench_max_length_and_language():
    items, _ = load("longbench", source=FIXTURES / "longbench", max_length=20000)
    assert len([i for i in items if i.subset == "hotpotqa_e"]) == 5
    assert items[4].metadata["length_bin"] == "8k-16k"
    zh, report = load("longbench", source=FIXTURES / "longbench",
                      subsets=["multifieldqa_zh"])
    assert zh == [] and report.dropped == {"language=zh": 1}
    zh, _ = load("longbench", source=FIXTURES / "longbench", subsets=["multifieldqa_zh"],
                 language="zh")
    assert zh[0].language == "zh"
    # without --subset, --language zh loads the Chinese QA configs, all both
    zh, _ = load("longbench", source=FIXTURES / "longbench", language="zh")
    assert [i.subset for i in zh] == ["multifieldqa_zh"]
    both, _ = load("longbench", source=FIXTURES / "longbench", language="all")
    assert {i.subset for i in both} == {"hotpotqa_e", "narrativeqa", "multifieldqa_zh"}


# --- LogiQA, LogiQA 2.0 ----------------------------------------------------------------------


def test_logiqa_eight_line_files_en_and_zh():
    en, _ = load("logiqa", source=FIXTURES / "logiqa")
    assert [i.id for i in en] == ["en-0000", "en-0001", "en-0002"]
    assert en[0].answer == "A" and en[0].options[0].startswith("Civic Park is north")
    zh, _ = load("logiqa", source=FIXTURES / "logiqa", language="zh")
    assert zh[0].context.startswith("某乡镇") and zh[0].metadata["number"] == 35
    assert not any(o[:2] in ("A.", "B.", "C.", "D.") for i in zh for o in i.options)


def test_logiqa_out_of_step_file_is_named(tmp_path):
    path = tmp_path / "Test.txt"
    lines = (FIXTURES / "logiqa" / "Test.txt").read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(lines[:8] + lines[9:]), encoding="utf-8")  # one line lost
    with pytest.raises(ItemError, match=r"Test.txt line 9: a LogiQA item starts with a blank"):
        load("logiqa", source=path)


def test_logiqa2_json_lines_native_ids_types_and_prefixes():
    en, _ = load("logiqa2", source=FIXTURES / "logiqa2")
    assert en[0].id == "en-2920" and en[0].answer == "D"
    assert en[0].metadata["reasoning_types"] == ["Sufficient Conditional Reasoning"]
    zh, _ = load("logiqa2", source=FIXTURES / "logiqa2", language="zh")
    assert zh[0].options[0] == "并不一定比“新拍”容易"  # "A." stripped
    assert all(not o.startswith(("A.", "B.")) for i in zh for o in i.options)


def test_chinese_logiqa_needs_a_local_copy():
    with pytest.raises(SourceError, match="pass --source with zh_test.txt"):
        load("logiqa", language="zh")


# --- exam MCQ ----------------------------------------------------------------------------


@pytest.fixture()
def exams(tmp_path):
    (tmp_path / "cmmlu" / "test").mkdir(parents=True)
    shutil.copy(FIXTURES / "cjk" / "cmmlu_chinese_history_test.csv",
                tmp_path / "cmmlu" / "test" / "chinese_history.csv")
    (tmp_path / "ceval" / "val").mkdir(parents=True)
    shutil.copy(FIXTURES / "cjk" / "ceval_zhtw_law_val.csv",
                tmp_path / "ceval" / "val" / "law_val.csv")
    return tmp_path


def test_cmmlu_and_ceval_release_layouts(exams):
    cmmlu, _ = load("cmmlu", source=exams / "cmmlu")
    assert cmmlu[0].id == "chinese_history-000" and cmmlu[0].language == "zh"
    assert len(cmmlu[0].options) == 4 and cmmlu[0].answer in "ABCD"
    ceval, _ = load("ceval-zhtw", source=exams / "ceval")
    assert ceval[0].split == "val" and ceval[0].language == "zh-TW"
    assert ceval[0].id == f"law-{ceval[0].metadata['native_id']:03d}"


def test_tmmluplus_splits_follow_the_hub_names():
    test, _ = load("tmmluplus", source=FIXTURES / "tmmluplus")
    assert [i.answer for i in test] == ["A", "B", "C"]
    val, _ = load("tmmluplus", source=FIXTURES / "tmmluplus", split="validation")
    assert len(val) == 1 and val[0].options[0] == "南投縣"


def test_exam_answer_outside_options_is_named(tmp_path):
    path = tmp_path / "data" / "music_test.csv"
    path.parent.mkdir()
    path.write_text("question,A,B,C,D,answer\n問?,一,二,三,四,E\n", encoding="utf-8")
    with pytest.raises(ItemError, match=r"music_test.csv line 2: field answer: 'E' is "):
        load("tmmluplus", source=tmp_path)


def test_shuffle_options_is_stable_and_keeps_the_answer():
    item = make_item(options=["w", "x", "right", "z"], answer="C")
    once, twice = shuffle_options(item, 0), shuffle_options(item, 0)
    assert once.options == twice.options
    assert once.options[ord(once.answer) - 65] == "right"
    assert once.metadata["original_options"] == ["w", "x", "right", "z"]
    assert once.metadata["original_answer"] == "C"
    letters = Counter(shuffle_options(make_item(id=f"t-{n}", options=list("abcd"), answer="A"),
                                      0).answer for n in range(800))
    assert all(150 <= c <= 250 for c in letters.values()), letters


# --- captions ------------------------------------------------------------------------------


def test_captions_coco_folder_one_or_all_captions():
    items, _ = load("captions", source=FIXTURES / "coco")
    assert len(items) == 2 and all(i.image.endswith(".jpg") for i in items)
    assert items[0].id == f"val2017-{items[0].metadata['image_id']:012d}"
    assert items[0].metadata["license"].startswith("Attribution")
    every, _ = load("captions", source=FIXTURES / "coco", all_captions=True)
    assert len(every) == 10 and len({i.id for i in every}) == 10


def test_captions_tsv_and_missing_image(tmp_path):
    image = next((FIXTURES / "coco" / "val2017").glob("*.jpg"))
    shutil.copy(image, tmp_path / "a.jpg")
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("image\tcaption\na.jpg\t一只猫坐在桌子上\nmissing.jpg\t一条狗\n",
                   encoding="utf-8")
    with pytest.raises(ItemError, match=r"pairs.tsv line 3: field image: image file .*missing"):
        load("captions", source=tsv, language="zh")
    items, report = load("captions", source=tsv, language="zh", on_error="skip")
    assert items[0].context == "一只猫坐在桌子上" and items[0].language == "zh"
    assert report.skipped[0]["id"] == "pairs-0001"


def test_captions_dataset_with_image_bytes(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    image = next((FIXTURES / "coco" / "val2017").glob("*.jpg")).read_bytes()
    folder = tmp_path / "vcr" / "default"
    folder.mkdir(parents=True)
    table = pa.table({"image": [{"bytes": image, "path": "x.jpg"}],
                      "caption": ["A red bus on a street."]})
    pq.write_table(table, folder / "test-00000-of-00001.parquet")
    (item,), _ = load("captions", source=tmp_path / "vcr")
    # the photo is left in the file for the worker that draws the item
    assert item.image.load() == image and item.context == "A red bus on a street."
    pq.write_table(pa.table({"image": [{"bytes": image, "path": "x"}], "title": ["t"]}),
                   folder / "test-00000-of-00001.parquet")
    with pytest.raises(SourceError, match=r"missing column\(s\) caption \(captions expects"):
        load("captions", source=tmp_path / "vcr")


def test_gpqa_order_does_not_depend_on_the_process(tmp_path):
    """ReadBench seeds with the salted hash(); ours must agree across processes."""
    import os
    import subprocess
    import sys

    code = ("from mmconvert.corpora import LoadReport, LoadRequest, resolve; import sys, json; "
            "from pathlib import Path; items = resolve('gpqa').load(LoadRequest("
            "source=Path(sys.argv[1])), LoadReport()); print(json.dumps([i.options for i in "
            "list(items)]))")
    outputs = {subprocess.run([sys.executable, "-c", code, str(FIXTURES / "gpqa")],
                              env={**os.environ, "PYTHONHASHSEED": str(salt)},
                              capture_output=True, text=True, check=True).stdout
               for salt in (1, 2, 3)}
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == [i.options for i in load("gpqa",
                                                                 source=FIXTURES / "gpqa")[0]]
