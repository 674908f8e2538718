"""Loaders never alter the text: each source field, read here from the raw file without the
loaders' code, is in the item unchanged, apart from the normalisation the guide states
(docs/guide.md, "Corpora"):

- surrounding white space is removed from GPQA's fields, bAbI's lines and captions;
- an option's letter prefix ("A.", "B、", …) is removed only when every option of the item
  carries its own letter in one form (LogiQA, LogiQA 2.0);
- LogiQA's Chinese passages lose their item number ("35.");
- MMLU-Pro's "N/A" padding options are removed;
- GPQA's options are shuffled (compared as a set).

Each case runs on the repository's fixtures, and on the shared samples (``../shared/data``)
where they are present, the whole of each."""

from __future__ import annotations

import ast
import csv
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mmconvert.corpora import LoadReport, resolve
from mmconvert.corpora.base import load_request
from tests.conftest import FIXTURES

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
LETTERED = re.compile(r"^\s*([A-Z])\s*([.．、:：)])\s*")


def load(name: str, **request):
    corpus = resolve(name)
    return list(corpus.load(load_request(corpus, request), LoadReport()))


def csv_rows(path: Path, header: bool = True) -> list:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle) if header else csv.reader(handle))
    return rows


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def unlettered(options: list[str]) -> list[str]:
    """The stated rule: letters off only when every option has its own, in one form."""
    found = [LETTERED.match(o) for o in options]
    if not all(found) or [m.group(1) for m in found] != [chr(65 + i) for i in range(len(found))]:
        return options
    if len({m.group(2).replace("．", ".").replace("：", ":") for m in found}) != 1:
        return options
    return [o[m.end():] for o, m in zip(options, found, strict=True)]


# --- each corpus: (items, what the raw file says each item holds) ---------------------------

def mmlu(root: Path):
    expected = []
    for path in sorted((root / "data" / "test").glob("*_test.csv")):
        for q, *options, _ in csv_rows(path, header=False):
            expected.append({"question": q, "options": options})
    return load("mmlu", source=root / "data"), expected


def mmlu_hub(root: Path):
    table = pq.read_table(next((root).rglob("test-*.parquet"))).to_pylist()
    return load("mmlu", source=root), [{"question": r["question"], "options": r["choices"]}
                                       for r in table]


def mmlu_redux(root: Path):
    """By id: a flagged row whose correct answer names no option is left out by a rule."""
    expected = {}
    for path in sorted(root.glob("mmlu_*.csv")):
        for n, r in enumerate(csv_rows(path)):
            expected[f"{path.stem[5:]}-{n:03d}"] = {
                "question": r["question"], "options": ast.literal_eval(r["choices"])}
    items = load("mmlu-redux", source=root, keep_flagged=True)
    assert len(items) >= len(expected) - 1
    return items, [expected[item.id] for item in items]


def mmlu_pro(root: Path):
    table = []
    for path in sorted(root.rglob("test*.parquet")):
        table += pq.read_table(path).to_pylist()
    expected = []
    for r in sorted(table, key=lambda r: r["category"]):  # subsets in order
        options = list(r["options"])
        while len(options) > 1 and options[-1] == "N/A":
            options.pop()
        expected.append({"question": r["question"], "options": options})
    items = load("mmlu-pro", source=root)
    items.sort(key=lambda i: i.subset.replace("_", " "))
    return items, expected


def gpqa(root: Path):
    rows = csv_rows(root / "gpqa_diamond.csv")
    columns = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2",
               "Incorrect Answer 3")
    return load("gpqa", source=root), [
        {"question": r["Question"].strip(), "options_set": {r[c].strip() for c in columns}}
        for r in rows]


def babilong_raw(root: Path):
    expected = []
    for path in sorted(root.rglob("qa*_test.txt"),
                       key=lambda p: int(re.match(r"qa(\d+)", p.name).group(1))):
        facts: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            number, text = line.split(" ", 1)
            if number == "1":
                facts = []
            if "\t" in text:
                question, answer = text.split("\t")[:2]
                expected.append({"context_parts": list(facts), "question": question.strip(),
                                 "answer": [answer.strip()]})
            else:
                facts.append(text.strip())
    items = load("babilong", source=root)
    order = {f"qa{n}": n for n in range(1, 21)}
    return sorted(items, key=lambda i: order[i.split]), expected


def babilong_hub(root: Path):
    rows = jsonl(root / "data" / "qa1" / "0k.json")
    rows += pq.read_table(root / "1k" / "qa2-00000-of-00001.parquet").to_pylist()
    return load("babilong", source=root), [
        {"context": r["input"], "question": r["question"], "answer": [r["target"]]}
        for r in rows]


def longbench(root: Path):
    expected = []
    names = []
    for path in sorted((root / "data").glob("*.jsonl")):
        names.append(path.stem)
        for r in jsonl(path):
            expected.append({"context": r["context"], "question": r["input"],
                             "answer": r["answers"]})
    return load("longbench", source=root, subsets=names, language="all",
                max_length=10 ** 9), expected


def logiqa(root: Path, language: str):
    name = "Test.txt" if language == "en" else "zh_test.txt"
    lines = (root / name).read_text(encoding="utf-8").split("\n")
    expected = []
    for start in range(0, len(lines) - 7, 8):
        block = lines[start:start + 8]
        context = block[2]
        if language == "zh":
            context = re.sub(r"^\s*\d+\s*[.．、]\s*", "", context)
        expected.append({"context": context, "question": block[3],
                         "options": unlettered(block[4:8])})
    return load("logiqa", source=root, language=language), expected


def logiqa2(root: Path, language: str):
    path = next(root.rglob("test.txt" if language == "en" else "test_zh.txt"))
    return load("logiqa2", source=path, language=language), [
        {"context": r["text"], "question": r["question"], "options": unlettered(r["options"])}
        for r in jsonl(path)]


def exams(name: str, path: Path, question: str):
    return load(name, source=path), [
        {"question": r[question], "options": [r[c] for c in "ABCD"]} for r in csv_rows(path)]


def captions(root: Path):
    data = json.loads((root / "annotations" / "captions_val2017.json").read_text("utf-8"))
    first = {}
    for a in data["annotations"]:  # one caption per image: the first
        first.setdefault(a["image_id"], a["caption"].strip())
    expected = [{"context": first[image["id"]]}
                for image in sorted(data["images"], key=lambda i: i["id"])]
    items = load("captions", source=root, split="val2017")
    return sorted(items, key=lambda i: i.metadata.get("image_id", 0)), expected


def hub_mcq(path: Path):
    expected = []
    for r in jsonl(path):
        if "choices" in r and isinstance(r["choices"], dict):  # ARC, OpenBookQA
            expected.append({"question": r.get("question") or r.get("question_stem"),
                             "options": r["choices"]["text"]})
        elif "endings" in r:  # HellaSwag
            expected.append({"options": r["endings"]})
        elif "sol1" in r:  # PIQA
            expected.append({"question": r["goal"], "options": [r["sol1"], r["sol2"]]})
        elif "option1" in r:  # WinoGrande
            expected.append({"question": r["sentence"], "options": [r["option1"],
                                                                    r["option2"]]})
        else:  # MMLU
            expected.append({"question": r["question"], "options": r["choices"]})
    return load(str(path)), expected


def generic(tmp_path: Path):
    rows = [{"id": "a", "question": "  Leading and trailing spaces stay  ",
             "options": ["A cat", "B. not a prefix here", "(C) nor here", "D"], "answer": 0},
            {"id": "b", "context": "Tabs\tand\nnewlines\r\nstay.", "question": "Why?",
             "answer": ["because"]}]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return load(str(path)), [{k: r[k] for k in ("question", "options", "context") if k in r}
                             for r in rows]


CASES = {
    "mmlu": lambda root, tmp: mmlu(root / "mmlu"),
    "mmlu-hub": lambda root, tmp: mmlu_hub(root / "mmlu" / ("hub" if root == FIXTURES
                                                          else "hub_format")),
    "mmlu-redux": lambda root, tmp: mmlu_redux(root / "mmlu-redux" / (
        "" if root == FIXTURES else "mmlu_redux")),
    "mmlu-pro": lambda root, tmp: mmlu_pro(root / "mmlu-pro" / "data"),
    "gpqa": lambda root, tmp: gpqa(root / "gpqa"),
    "babilong-raw": lambda root, tmp: babilong_raw(root / ("babilong-raw" if root == FIXTURES
                                                           else "babilong")),
    "babilong-hub": lambda root, tmp: babilong_hub(root / "babilong-hub"),
    "longbench": lambda root, tmp: longbench(root / "longbench"),
    "logiqa-en": lambda root, tmp: logiqa(root / "logiqa", "en"),
    "logiqa-zh": lambda root, tmp: logiqa(root / "logiqa", "zh"),
    "logiqa2-en": lambda root, tmp: logiqa2(root / "logiqa2", "en"),
    "logiqa2-zh": lambda root, tmp: logiqa2(root / "logiqa2", "zh"),
    "logiqa2-article": lambda root, tmp: logiqa2(root / "logiqa2-article", "en"),
    "cmmlu": lambda root, tmp: exams("cmmlu", next((root / ("cjk" if root == FIXTURES else
                                                            "cmmlu")).rglob(
        "*chinese_history*.csv")), "Question"),
    "ceval-zhtw": lambda root, tmp: exams("ceval-zhtw", next((root / (
        "cjk" if root == FIXTURES else "ceval-exam-zhtw")).rglob("*law_val.csv")), "question"),
    "tmmluplus": lambda root, tmp: exams("tmmluplus", root / "tmmluplus" / "data" /
                                         "geography_of_taiwan_test.csv", "question"),
    "captions": lambda root, tmp: captions(root / "coco"),
    **{f"hub-mcq-{name}": (lambda root, tmp, name=name: hub_mcq(root / "hub-mcq" /
                                                                 f"{name}.jsonl"))
       for name in ("arc", "openbookqa", "hellaswag", "piqa", "winogrande", "mmlu")},
    "files": lambda root, tmp: generic(tmp),
}
# what the shared samples hold (the rest are fixtures of our own writing, in the hub schema)
IN_SHARED = {"mmlu", "mmlu-hub", "mmlu-redux", "mmlu-pro", "babilong-raw", "logiqa-en",
             "logiqa-zh", "logiqa2-en", "logiqa2-zh", "cmmlu", "ceval-zhtw"}
ROOTS = [("fixtures", FIXTURES)] + ([("shared", SHARED)] if SHARED.is_dir() else [])


def check(items, expected) -> int:
    """Every raw field in its item, unchanged; the number of fields checked."""
    assert len(items) == len(expected), (len(items), len(expected))
    checked = 0
    for item, want in zip(items, expected, strict=True):
        for name, value in want.items():
            where = f"{item.id} {name}"
            if name == "options_set":
                assert set(item.options) == value, where
            elif name == "context_parts":
                position = 0
                for part in value:
                    found = item.context.find(part, position)
                    assert found >= 0, f"{where}: {part!r}"
                    position = found + len(part)
            else:
                assert getattr(item, name) == value, f"{where}: {getattr(item, name)!r}"
            checked += 1
    return checked


@pytest.mark.parametrize("root", [name for name, _ in ROOTS])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_source_field_reaches_the_item_unchanged(case, root, tmp_path):
    if root == "shared" and case not in IN_SHARED:
        pytest.skip("not in the shared samples")
    items, expected = CASES[case](dict(ROOTS)[root], tmp_path)
    assert check(items, expected) >= len(items)


def test_logiqa2_keeps_the_article_a_of_option_a():
    """The shared sample's "A manufacturer has designed…" (option A, no letter prefix)."""
    path = FIXTURES / "logiqa2-article" / "test.txt"
    items = load("logiqa2", source=path)
    assert [i.options[0] for i in items] == [json.loads(line)["options"][0] for line in
                                             path.read_text("utf-8").splitlines()]
    assert [i.options[0][:2] for i in items] == ["A ", "A "]


def test_a_letter_prefix_is_stripped_only_when_every_option_has_its_own():
    from mmconvert.corpora.logiqa import strip_letters

    assert strip_letters(["A.x", "B.y", "C.z", "D.w"]) == ["x", "y", "z", "w"]
    assert strip_letters(["A、x", "B、y", "C、z", "D、w"]) == ["x", "y", "z", "w"]
    assert strip_letters(["A.x", "B、y", "C.z", "D.w"]) == ["A.x", "B、y", "C.z", "D.w"]
    assert strip_letters(["A.x", "y", "C.z", "D.w"]) == ["A.x", "y", "C.z", "D.w"]
    assert strip_letters(["B.x", "A.y"]) == ["B.x", "A.y"]  # not their own letters
    assert strip_letters(["A man", "B cat", "C dog", "D"]) == ["A man", "B cat", "C dog", "D"]
