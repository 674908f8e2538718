"""``mmconvert frontier``: styles rendered on a dev sample, costed and scored, and the Pareto
front of accuracy against compression; scored by a real local HTTP server whose accuracy is a
known function of the image, and by Tesseract."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from mmconvert.qa.checks import expected_text
from tests.conftest import SAMPLE
from tests.openai_server import FakeOpenAI
from tests.test_cli import run
from tests.test_stats import minilm_folder
from tests.typed import typed_rows

# the server reads an item right when its image holds at least this many pixels a character
PIXELS_PER_CHARACTER = 400
GRID = ("--style", "readbench", "--grid", "font_size:5,8,12,16")


def points_rows(out: Path) -> dict[str, list[dict]]:
    return {folder.name: typed_rows(folder)
            for folder in sorted((out / "points").iterdir())}


def legible(row: dict, area: int) -> bool:
    return area / len(expected_text(row)) >= PIXELS_PER_CHARACTER


def codeword_items(path: Path, count: int, fillers: int, places: tuple[int, ...]) -> Path:
    """Long contexts whose answer needs one sentence, put at one of ``places`` among
    ``fillers`` filler sentences."""
    from tests.evaluation.test_text_budget import FILLER, needed

    with open(path, "w") as handle:
        for index in range(count):
            sentences = [FILLER] * fillers
            sentences.insert(places[index % len(places)], needed(index) + " ")
            handle.write(json.dumps({
                "id": f"doc-{index:02d}", "context": "".join(sentences).strip(),
                "question": f"What is the code word for file {index}?",
                "answer": [f"ZEPHYR{index:03d}"]}) + "\n")
    return path


def known_reader(out: Path):
    """A server's answer rule over the points under ``out``: an image is read right when
    it is legible (PIXELS_PER_CHARACTER), a text when the needed sentence is whole in it."""
    from tests.evaluation.test_text_budget import needed

    def answer(body):
        parts = body["messages"][-1]["content"]
        parts = parts if isinstance(parts, list) else [{"type": "text", "text": parts}]
        text = " ".join(p.get("text", "") for p in parts if p.get("type") == "text")
        file = int(text.split("code word for file ")[-1].split("?")[0])
        urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
        if urls:
            digest = hashlib.sha256(base64.b64decode(urls[0].split(",", 1)[1])).hexdigest()
            row = next(r for rs in points_rows(out).values() for r in rs
                       if any(i["sha256"] == digest for i in r["images"]))
            right = legible(row, sum(i["width"] * i["height"] for i in row["images"]))
        else:
            right = needed(file) in text
        return f"Answer: {f'ZEPHYR{file:03d}' if right else 'unknown'}"

    return answer


@pytest.fixture
def reader(tmp_path):
    """A local OpenAI-compatible server that answers an item's question right exactly when
    the page it is shown has PIXELS_PER_CHARACTER or more (it finds the item by the page's
    hash among the frontier's runs), else with another letter."""
    out = tmp_path / "frontier"

    def answer(body):
        parts = body["messages"][-1]["content"]
        if isinstance(parts, str):
            parts = [{"type": "text", "text": parts}]
        urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
        if not urls:  # the text twin: always right
            text = " ".join(p.get("text", "") for p in parts)
            rows = [r for rs in points_rows(out).values() for r in rs]
            return f"Answer: {next(r['answer'] for r in rows if r['text_prompt'] == text)}"
        data = urls[0]
        png = base64.b64decode(data.split(",", 1)[1])
        digest = hashlib.sha256(png).hexdigest()
        row = next(r for rs in points_rows(out).values() for r in rs
                   if any(i["sha256"] == digest for i in r["images"]))
        with Image.open(io.BytesIO(png)) as image:
            area = image.width * image.height
        wrong = next(letter for letter in "ABCD" if letter != row["answer"])
        return f"Answer: {row['answer'] if legible(row, area) else wrong}"

    fake = FakeOpenAI(answer=answer, models=("reader",))
    url = fake.start()
    yield fake, url, out
    fake.stop()


@pytest.mark.slow
def test_the_frontier_scores_each_style_by_a_known_function_of_its_images(reader, tmp_path):
    fake, url, out = reader
    args = ["frontier", "mmlu-redux", "--source", SAMPLE, "--tokenizer", minilm_folder(),
            "--ratio-model", "qwen2.5-vl", *GRID, "--model", "reader", "--base-url", url,
            "--modality", "image,text", "--out", out]
    result = run(*args)
    assert result.exit_code == 0, result.output
    found = json.loads((out / "frontier.json").read_text())
    rows = points_rows(out)
    assert [p["name"] for p in found["points"]] == ["p01", "p02", "p03", "p04"]
    for point in found["points"]:
        items = rows[point["name"]]
        right = [legible(r, sum(i["width"] * i["height"] for i in r["images"])) for r in items]
        assert point["accuracy"] == pytest.approx(100 * sum(right) / len(right), abs=1e-3)
        assert point["n"] == len(items) and point["text"] == 100.0
        assert point["style"]["font_size"] == float(point["label"].split("=")[1])
    accuracies = [p["accuracy"] for p in found["points"]]
    assert accuracies[0] < 50 and accuracies[-1] == 100  # the known function discriminates
    # the front: no point on it is beaten, and every point off it is beaten by one on it
    def beats(a, b):
        return (a["accuracy"] >= b["accuracy"] and a["compression"] >= b["compression"]
                and (a["accuracy"], a["compression"]) != (b["accuracy"], b["compression"]))
    front = [p for p in found["points"] if p["on_front"]]
    assert [p["name"] for p in sorted(front, key=lambda p: p["compression"])] == found["front"]
    assert not any(beats(q, p) for p in front for q in found["points"])
    assert all(any(beats(q, p) for q in front) for p in found["points"] if not p["on_front"])
    # compression: the items' text tokens over their qwen2.5-vl tokens, as stats counts them
    stats = run("stats", out / "points" / "p02", "--tokenizer", minilm_folder(),
                "--models", "qwen2.5-vl", "--json", "--no-plots")
    per_item = json.loads(stats.output)["per_item"]
    assert found["points"][1]["compression"] == pytest.approx(
        sum(i["text_tokens"] for i in per_item)
        / sum(i["tokens"]["qwen2.5-vl"] for i in per_item), abs=1e-4)
    assert (out / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a point's style file renders the same pages with render --style
    again = tmp_path / "again"
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--limit", "50", "--style",
               out / "styles" / "p03.yaml", "--out", again).exit_code == 0
    assert [i["sha256"] for r in typed_rows(again) for i in r["images"]] \
        == [i["sha256"] for r in rows["p03"] for i in r["images"]]
    # a second run (as after a kill) redraws nothing and sends nothing: the same frontier
    sent, before = len(fake.requests("chat")), (out / "frontier.json").read_bytes()
    second = run(*args)
    assert second.exit_code == 0 and "0 item(s) rendered, 9 already done" in second.output
    assert len(fake.requests("chat")) == sent
    assert (out / "frontier.json").read_bytes() == before


@pytest.mark.slow
def test_without_a_model_tesseract_scores_each_style(tmp_path):
    out = tmp_path / "ocr"
    args = ["frontier", "mmlu-redux", "--source", SAMPLE, "--tokenizer", minilm_folder(),
            "--ratio-model", "glm-4.1v", "--style", "readbench", "--grid", "font_size:4,12",
            "--out", out]
    result = run(*args)
    assert result.exit_code == 0, result.output
    found = json.loads((out / "frontier.json").read_text())
    small, large = found["points"]
    assert found["scorer"] == "ocr:tesseract"
    assert large["accuracy"] > 80 > 20 > small["accuracy"]  # 4 pt type at 92.9 ppi: unread
    assert small["compression"] > large["compression"]
    assert found["front"] == ["p02", "p01"]  # each wins on one axis
    kept = json.loads((out / "evals" / "p02" / "ocr.json").read_text())
    assert len(kept["items"]) == 9 and all(0 <= i["accuracy"] <= 1 for i in kept["items"])
    before = (out / "frontier.json").read_bytes()
    assert run(*args).exit_code == 0 and (out / "frontier.json").read_bytes() == before


def test_drawn_points_are_seeded_and_the_same_values_are_one_point(tmp_path):
    from mmconvert.evaluation.frontier import FrontierOptions, style_points

    def points(**given):
        options = FrontierOptions(tokenizer="t.json", ratio_model="qwen2-vl", **given)
        return [(p.name, p.values) for p in style_points(options)]

    drawn = points(points=6, seed=3)
    assert drawn == points(points=6, seed=3) and drawn != points(points=6, seed=4)
    assert len({json.dumps(v, sort_keys=True) for _, v in drawn}) == 6
    # a style that draws nothing gives one point however many are asked for
    assert len(points(style="readbench", points=5)) == 1
    grid = points(style="readbench", grid=["font_size:9,12", "ppi:72,96"])
    assert [(v["font_size"], v["ppi"]) for _, v in grid] == [
        (9.0, 72.0), (9.0, 96.0), (12.0, 72.0), (12.0, 96.0)]


@pytest.mark.parametrize(("extra", "message"), [
    (["--grid", "font_sise:3,4"], "'font_sise' is not a page style field; did you mean "
                                  "'font_size'?"),
    (["--grid", "font_size:3,x"], "--grid font_size=x: font_size:"),
    (["--grid", "font_size"], "--grid font_size: expected NAME:V1,V2"),
    (["--ratio-model", "qwen2.5vl"], "did you mean 'qwen2.5-vl'?"),
    (["--style", "wilde"], "did you mean 'wild'?"),
    # a frontier of no score: it rendered and asked, then fell on a KeyError
    (["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--modality", "text,text-budget"],
     "--modality: each point's figure is its image condition's score; give image among"),
    # a probe asks its own condition: the conditions given were left unasked, silently
    (["--probe", "transcribe", "--modality", "image,text"], "give --modality or --probe, not"),
    # without a model Tesseract scores each point: a probe or conditions would be unasked
    (["--probe", "transcribe"], "--probe: conditions a model is asked; without --model"),
    (["--modality", "image,text"], "--modality: conditions a model is asked; without --model"),
])
def test_bad_frontier_options_are_one_line(tmp_path, extra, message):
    args = ["frontier", "mmlu-redux", "--source", SAMPLE, "--tokenizer", minilm_folder(),
            "--ratio-model", "qwen2-vl", "--out", tmp_path / "f", *extra]
    result = run(*args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "f" / "points").exists()  # refused before any render


def test_a_frontier_needs_a_tokenizer(tmp_path):
    result = run("frontier", "mmlu-redux", "--ratio-model", "qwen2-vl", "--out", tmp_path)
    assert result.exit_code == 2 and "--tokenizer: Field required" in result.output


def test_a_frontier_over_a_recipe_renders_its_pages(tmp_path):
    """--recipe: every point is the recipe's render with the point's style fields over it; the
    point at the recipe's own values draws the pages render --recipe draws."""
    out = tmp_path / "f"
    result = run("frontier", "mmlu-redux", "--source", SAMPLE, "--recipe", "readbench",
                 "--grid", "ppi:60,92.9", "--tokenizer", minilm_folder(), "--ratio-model",
                 "qwen2-vl", "--limit", "2", "--out", out)
    assert result.exit_code == 0, result.output
    assert run("render", "mmlu-redux", "--source", SAMPLE, "--recipe", "readbench", "--limit",
               "2", "--out", tmp_path / "r").exit_code == 0
    rows = points_rows(out)
    recipe_run = typed_rows(tmp_path / "r")
    assert [[i["sha256"] for i in r["images"]] for r in rows["p02"]] == \
        [[i["sha256"] for i in r["images"]] for r in recipe_run]
    assert {r["renderer"]["params"]["ppi"] for r in rows["p01"]} == {60.0}
    record = json.loads((out / "frontier.json").read_text())
    assert record["recipe"] == "readbench" and record["style"] == "readbench"
    other = tmp_path / "occlude.yaml"
    other.write_text("name: occ\nrenderer: occlude\n")
    result = run("frontier", "mmlu-redux", "--source", SAMPLE, "--recipe", other,
                 "--tokenizer", minilm_folder(), "--ratio-model", "qwen2-vl", "--out",
                 tmp_path / "g")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "drawn by the occlude renderer, which takes no style" in result.output


@pytest.mark.slow
def test_each_point_has_its_text_baseline_at_the_same_budget(tmp_path, monkeypatch):
    """Long contexts whose answer needs one sentence: an image is read right when it has
    PIXELS_PER_CHARACTER or more, a text when the needed sentence is whole in it. Each point's
    image score and its text baseline (the text cut to the point's own vision tokens) equal
    that function; the smaller the type, the fewer vision tokens, the less text kept."""
    from inspect_ai.log import read_eval_log

    from tests.evaluation.test_text_budget import needed

    items = codeword_items(tmp_path / "items.jsonl", 9, 40, (3, 20, 37))
    out = tmp_path / "f"
    fake = FakeOpenAI(answer=known_reader(out), models=("reader",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-written-0123456789")
    try:
        result = run("frontier", items, "--tokenizer", minilm_folder(), "--ratio-model",
                     "qwen2.5-vl", "--style", "readbench", "--grid", "font_size:4,8,24",
                     "--model", "reader", "--base-url", url, "--modality",
                     "image,text-budget,text", "--out", out)
        assert result.exit_code == 0, result.output
    finally:
        fake.stop()
    found = json.loads((out / "frontier.json").read_text())
    rows = points_rows(out)
    baselines = []
    for point in found["points"]:
        items_rows = rows[point["name"]]
        right = [legible(r, sum(i["width"] * i["height"] for i in r["images"]))
                 for r in items_rows]
        assert point["accuracy"] == pytest.approx(100 * sum(right) / len(right), abs=1e-3)
        # the baseline: the known function of each text this point's evaluation sent
        (log,) = [read_eval_log(str(path)) for path in
                  (out / "evals" / point["name"] / "logs").glob("*text-budget*.eval")]
        texts = [" ".join(part.text for part in sample.input[-1].content
                          if getattr(part, "text", None)) for sample in log.samples]
        kept = [needed(int(sample.id[-2:])) in text
                for sample, text in zip(log.samples, texts, strict=True)]
        assert len(kept) == len(items_rows) and all("[...]" not in t for t in texts)
        assert point["text_baseline"] == pytest.approx(100 * sum(kept) / len(kept), abs=1e-3)
        assert point["text"] == 100.0
        baselines.append(point["text_baseline"])
    # smaller type: fewer vision tokens, so less text kept and a lower baseline
    assert baselines == sorted(baselines) and baselines[0] < baselines[-1]
    accuracies = [p["accuracy"] for p in found["points"]]
    assert accuracies[0] == 0 and accuracies[-1] == 100  # the image function discriminates
    assert "text@budget" in result.output


@pytest.mark.slow
def test_a_frontier_over_a_document_recipe_typesets_each_point(tmp_path):
    pytest.importorskip("playwright")
    recipe = tmp_path / "doc.yaml"
    recipe.write_text("name: doc\nrenderer: document\nscope: context\n")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"d{n}", "context": "Some **bold** prose. " * 40,
                                         "question": "Q?", "answer": ["a"]}) + "\n"
                             for n in range(2)))
    out = tmp_path / "f"
    result = run("frontier", items, "--recipe", recipe, "--grid", "font_size:8,14",
                 "--tokenizer", minilm_folder(), "--ratio-model", "qwen2.5-vl", "--out", out)
    assert result.exit_code == 0, result.output
    rows = points_rows(out)
    assert {r["renderer"]["name"] for rs in rows.values() for r in rs} == {"document"}
    assert [rows[p][0]["renderer"]["params"]["font_size"] for p in ("p01", "p02")] == [8, 14]


@pytest.mark.parametrize(("command", "args", "said"), [
    ("frontier", ("--model", "m", "--modality", "text-image"),
     "--modality: the frontier scores image and text; text-image is occlusions' own"),
    ("curve", ("--model", "m", "--modality", "text-image", "--budgets", "256"),
     "--modality: text-image is occlusions' own"),
    ("frontier", ("--model", "m", "--modality", "text"),
     "--modality: each point's figure is its image condition's score; give image among the "
     "conditions"),
    ("curve", ("--model", "m", "--modality", "text", "--budgets", "256"),
     "--modality: each point's figure is its image condition's score; give image among the "
     "conditions"),
    ("frontier", ("--modality", "image"),
     "--modality: conditions a model is asked; without --model, Tesseract's character "
     "accuracy scores each point"),
])
def test_curve_and_frontier_refuse_conditions_they_cannot_ask_alike(command, args, said,
                                                                   tmp_path):
    """Both check ``--modality`` where their options are built (``modality_refused``), so
    ``mmconvert.evaluation.frontier.FrontierOptions`` refuses what the CLI refuses: one line,
    exit 2, before anything is rendered."""
    from pydantic import ValidationError

    from mmconvert.evaluation.frontier import FrontierOptions

    out = tmp_path / "out"
    result = run(command, "mmlu-redux", "--source", SAMPLE, "--base-url", "http://127.0.0.1:9",
                 "--tokenizer", minilm_folder(), "--ratio-model", "qwen2.5-vl", *args,
                 "--out", out)
    assert (result.exit_code, result.output) == (2, f"Error: {said}\n")
    assert not out.exists()
    if command == "frontier":
        given = dict(zip(args[::2], args[1::2], strict=True))
        with pytest.raises(ValidationError, match=said.split(": ", 1)[1][:30]):
            FrontierOptions(tokenizer=str(minilm_folder()), ratio_model="qwen2.5-vl",
                            model=given.get("--model"), modality=[given["--modality"]])
