"""The VLMEvalKit dataset that draws each item with a recipe as the kit asks for it: its pages
are ``render --recipe``'s, byte for byte, its prompt the row's, and a predictions file scores as
the static TSV export's own scorer scores it."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pandas

from mmconvert.harness.vlmevalkit import RenderedDataset
from mmconvert.manifest import JsonlLog
from tests.conftest import SAMPLE
from tests.test_cli import run


def test_the_live_dataset_draws_what_render_writes_and_scores_as_the_export(tmp_path):
    rendered = tmp_path / "run"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--recipe", "readbench", "--limit",
               "4", "--out", rendered).exit_code == 0
    rows = JsonlLog(rendered / "manifest.jsonl").read()
    dataset = RenderedDataset("mmlu-redux", "readbench", source=SAMPLE, limit=4,
                              cache_dir=tmp_path / "cache")
    assert list(dataset.data["id"]) == [row["id"] for row in rows]
    assert dataset.dataset_name == "mmconvert-mmlu-redux-readbench"
    for number, row in enumerate(rows):
        message = dataset.build_prompt(number)
        images = [part["value"] for part in message if part["type"] == "image"]
        assert [Path(p).read_bytes() for p in images] == \
            [(rendered / e["path"]).read_bytes() for e in row["images"]]
        assert message[-1] == {"type": "text", "value": row["prompt"]}
        assert dataset.dump_image(dataset.data.iloc[number]) == images  # the same files
    # predictions as the kit writes them: some right, one unparsed
    replies = ["Answer: " + rows[0]["answer"], "Answer: Z", "no idea",
               "Answer: " + rows[3]["answer"]]
    predictions = tmp_path / "predictions.tsv"
    pandas.DataFrame({"index": list(range(4)), "prediction": replies}).to_csv(
        predictions, sep="\t", index=False)
    live = dataset.evaluate(predictions)
    assert run("export", rendered, "--format", "vlmevalkit", "--out", tmp_path / "tsv"
               ).exit_code == 0
    spec = importlib.util.spec_from_file_location(
        "kit", tmp_path / "tsv" / "mmconvert_vlmevalkit.py")
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    static = kit.score_file(str(predictions), str(tmp_path / "tsv" / "run.tsv"))
    assert {k: v["score"] for k, v in live["items"].items()} == \
        {k: v["score"] for k, v in static["items"].items()}
    assert (live["score"], live["n"], live["unparsed"]) == (static["score"], static["n"],
                                                            static["unparsed"]) == (50.0, 4, 2)
    # the kit's dump writes a .pkl beside the .xlsx it was asked for when it cannot write
    # xlsx, and passes on the .xlsx's name
    pandas.read_csv(predictions, sep="\t").to_pickle(tmp_path / "kit.pkl")
    assert dataset.evaluate(tmp_path / "kit.xlsx")["score"] == 50.0


def test_the_live_dataset_takes_items_and_asks_the_text_twin(tmp_path):
    items = [{"id": "q1", "question": "Which is a fruit?", "options": ["Stone", "Pear"],
              "answer": "B"},
             {"id": "q2", "question": "Name the colour of the sky.", "answer": ["blue"]}]
    text = RenderedDataset(items, "glyph", prompt="text", cache_dir=tmp_path / "c")
    assert [part["type"] for part in text.build_prompt(0)] == ["text"]
    assert "Pear" in text.build_prompt(0)[0]["value"]
    image = RenderedDataset(items, "glyph", cache_dir=tmp_path / "c")
    pages = image.dump_image(1)
    assert pages and all(Path(p).name == f"{hashlib.sha256(Path(p).read_bytes()).hexdigest()}.png"
                         for p in pages)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "prediction": p}) + "\n"
                                   for i, p in (("q1", "Answer: B"), ("q2", "Answer: Blue."))))
    assert {k: v["score"] for k, v in image.evaluate(predictions)["items"].items()} == \
        {"q1": 1.0, "q2": 1.0}
