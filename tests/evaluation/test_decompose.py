"""``mmconvert eval decompose``: prior, reading, modality and the priors in reading, in one
table, checked on a real server on 127.0.0.1 whose prior, reading and reasoning are known
functions of the item, so every cell's truth is known before the run:
- on a blank page it answers A (its prior);
- on a page it reads the items of READ (answers their gold letter) and falls to its prior on
  the others;
- on the text it answers the items of REASONS right and the others wrong;
- asked to transcribe a page, it writes the page's text exactly for the items of READ, and
  nothing for the others; on a nonce page, only for the items of READ_NONCE.
"""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image

from mmconvert.evaluation.transcribe import TRANSCRIBE_PROMPT
from mmconvert.qa.checks import expected_text
from tests.openai_server import FakeOpenAI
from tests.test_cli import run
from tests.typed import typed_rows

pytest.importorskip("inspect_ai")

READ, REASONS, READ_NONCE = {0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 2, 4}


@pytest.mark.slow
def test_every_cell_of_the_decomposition_equals_its_truth(tmp_path, monkeypatch, sample_run,
                                                          nonce_run):
    real, nonce = sample_run, nonce_run  # the session's renders, plain and --nonce 7: read only
    rows = typed_rows(real)
    nonce_rows = typed_rows(nonce)
    pages: dict[bytes, tuple[int, bool]] = {}
    # a page with no words (astronomy-001's options are numbers) is the same nonce page:
    # the server cannot tell them apart and reads it as the real one (the real pages go last)
    for kind, folder, found in ((True, nonce, nonce_rows), (False, real, rows)):
        for number, row in enumerate(found):
            with Image.open(folder / row["images"][0]["path"]) as page:
                pages[page.tobytes()] = (number, kind)

    def answer(body):
        content = body["messages"][-1]["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = "".join(p.get("text", "") for p in parts)
        images = [Image.open(io.BytesIO(base64.b64decode(p["image_url"]["url"].split(",")[1])))
                  for p in parts if p.get("type") == "image_url"]
        if not images:  # the text: reasoning
            number = next(n for n, r in enumerate(rows) if r["question"] in text)
            gold = rows[number]["answer"]
            return f"Answer: {gold if number in REASONS else 'ABCD'[('ABCD'.index(gold) + 1) % 4]}"
        found = pages.get(images[0].tobytes())
        if found is None:  # a blank page: the prior
            return "Answer: A"
        number, is_nonce = found
        if text == TRANSCRIBE_PROMPT:
            chosen = READ_NONCE if is_nonce else READ
            return expected_text((nonce_rows if is_nonce else rows)[number]) \
                if number in chosen else ""
        return f"Answer: {rows[number]['answer'] if number in READ else 'A'}"

    fake = FakeOpenAI(answer=answer, models=("reader-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    common = ["--model", "reader-1", "--base-url", url]
    printed = {}
    try:
        for args, out in (((real, "--modality", "image,blank,text"), "answers"),
                          ((real, "--probe", "transcribe"), "read"),
                          ((nonce, "--probe", "transcribe"), "read-nonce")):
            done = run("eval", *args, *common, "--out", tmp_path / out)
            assert done.exit_code == 0, done.output
            printed[out] = done.output
    finally:
        fake.stop()
    result = run("eval", "decompose", *(tmp_path / o for o in ("answers", "read",
                                                               "read-nonce")), "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    n = len(rows)

    def pct(values):
        return round(100 * sum(values) / len(values), 4)

    prior = [float(r["answer"] == "A") for r in rows]
    image = [1.0 if i in READ else prior[i] for i in range(n)]
    text = [float(i in REASONS) for i in range(n)]
    read = [float(i in READ) for i in range(n)]
    same = {i for i in range(n) if expected_text(rows[i]) == expected_text(nonce_rows[i])}
    assert 1 in same  # astronomy-001: numbers only
    read_nonce = [float(i in (READ if i in same else READ_NONCE)) for i in range(n)]
    overall = found["overall"]
    assert {k: overall[k]["score"] for k in ("blank", "image", "text", "transcription",
                                             "nonce")} == {
        "blank": pct(prior), "image": pct(image), "text": pct(text),
        "transcription": pct(read), "nonce": pct(read_nonce)}

    def delta(a, b):
        return pct([x - y for x, y in zip(a, b, strict=True)])

    assert overall["reading"]["delta"] == delta(image, prior)
    assert overall["modality"]["delta"] == delta(text, image)
    assert overall["prior_reading"]["delta"] == delta(read, read_nonce)
    assert "budget" not in overall  # no text-budget evaluation was given
    # the answers' own evaluation carries its part of the table in results.json, and prints it
    own = json.loads((tmp_path / "answers" / "results.json").read_text())["decomposition"]
    assert own["figures"] == ["blank", "image", "text"]
    assert {k: own["overall"][k] for k in ("blank", "image", "text", "reading", "modality")} \
        == {k: overall[k] for k in ("blank", "image", "text", "reading", "modality")}
    assert own["subsets"].keys() == found["subsets"].keys()
    assert "why reader-1 lost" in printed["answers"]
    assert "decomposition" not in json.loads((tmp_path / "read" / "results.json").read_text())
    assert "why reader-1 lost" not in printed["read"]
    low, high = overall["reading"]["ci95"]
    assert low <= overall["reading"]["delta"] <= high
    for subset, figures in found["subsets"].items():
        ids = [i for i, r in enumerate(rows) if r["subset"] == subset]
        assert figures["image"]["score"] == pct([image[i] for i in ids])
        assert figures["nonce"]["score"] == pct([read_nonce[i] for i in ids])
    table = run("eval", "decompose", *(tmp_path / o for o in ("answers", "read",
                                                              "read-nonce")),
                "--out", tmp_path / "why").output
    assert json.loads((tmp_path / "why" / "decompose.json").read_text())["overall"] == overall
    assert (tmp_path / "why" / "decompose.png").read_bytes().startswith(b"\x89PNG")
    assert table.splitlines()[0].startswith("why reader-1 lost")
    assert "prior_reading" in table.splitlines()[1]


def test_decompose_refuses_two_models_and_an_empty_call(tmp_path):
    result = run("eval", tmp_path, "--model", "m", "--probe", "transcribe", "--modality",
                 "image")
    assert result.exit_code != 0 and result.output.strip() == (
        "Error: --probe transcribe asks its own condition (the pages, to be transcribed): "
        "give --modality or --probe, not both")
    result = run("eval", "decompose")
    assert result.exit_code != 0 and "needs one or more eval folders" in result.output
    result = run("eval", "decompose", tmp_path)
    assert result.exit_code != 0 and "not an mmconvert eval folder" in result.output
