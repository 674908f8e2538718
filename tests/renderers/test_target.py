"""Pages drawn to a compression ratio or a vision-token budget (``--target-ratio``,
``--vision-budget``): the chosen size meets the target within 5 % or says why not, in a few
layouts, and ``mmconvert stats`` reads back the ratio the rows record."""

from __future__ import annotations

import json
import math

import pytest

from mmconvert.errors import UsageError
from mmconvert.renderers.target import TargetOptions, fit
from tests.test_cli import run
from tests.test_stats import minilm_folder

PROSE = ("The lantern by the harbour was painted red, and the river stone beside it kept the "
         "archive's signal copper bright. ")


def items_file(tmp_path, count=6):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{n}", "context": PROSE * (4 + 9 * n)}) + "\n"
                            for n in range(count)), encoding="utf-8")
    return path


def stepped(size: float) -> int:
    """Tokens that grow with the square of the size, in steps of 10."""
    return 10 * math.ceil(3.7 * size * size / 10)


def test_the_search_meets_a_reachable_target_in_a_few_layouts():
    options = TargetOptions(vision_budget=600, ratio_model="qwen2-vl")
    found = fit(options, None, stepped, start=12)
    assert found.record["within"] and abs(found.vision_tokens - 600) <= 30
    assert found.layouts <= 4
    ratio = TargetOptions(target_ratio=2, ratio_model="qwen2-vl", tokenizer="x")
    found = fit(ratio, 1000, stepped, start=12)
    assert found.record["within"] and abs(found.record["ratio"] - 2) <= 0.1
    assert found.font_size == round(found.font_size, 2)


def test_an_unreachable_target_is_recorded_with_its_nearest_and_why():
    options = TargetOptions(vision_budget=5, ratio_model="qwen2-vl", min_font_size=6)
    found = fit(options, None, stepped, start=12)
    assert not found.record["within"] and found.font_size == 6
    assert "even at the smallest size, 6 pt" in found.record["reason"]
    coarse = fit(TargetOptions(vision_budget=550, ratio_model="qwen2-vl"), None,
                 lambda size: 100 * math.ceil(3.7 * size * size / 100))
    assert not coarse.record["within"] and "come in steps" in coarse.record["reason"]
    assert fit(TargetOptions(vision_budget=600, ratio_model="qwen2-vl"), None,
               lambda size: None).record["reason"].endswith("refuses these pages")


def test_render_to_a_ratio_and_stats_reads_the_same_ratio_back(tmp_path):
    out = tmp_path / "run"
    result = run("render", items_file(tmp_path), "--render", "context", "--target-ratio", 2,
                 "--ratio-model", "qwen2.5-vl", "--tokenizer", minilm_folder(), "--out", out)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    within = [r for r in rows if r["target"]["within"]]
    assert len(within) >= len(rows) - 1
    for row in rows:
        target = row["target"]
        assert target["model"] == "qwen2.5-vl" and target["target_ratio"] == 2
        assert row["renderer"]["params"]["font_size"] == target["font_size"]
        assert target["layouts"] <= (8 if "moved" not in target else 8 * 17)
        if "page_width" in target:  # moved in Qwen's 28 px cells from the A4 width
            assert row["renderer"]["params"]["page_width"] == target["page_width"]
            assert (round(target["page_width"] * 92.9) - round(8.27 * 92.9)) % 28 == 0
        if not target["within"]:
            assert target["reason"]
    stats = run("stats", out, "--tokenizer", minilm_folder(), "--json", "--no-plots")
    assert stats.exit_code == 0, stats.output
    figures = json.loads(stats.output[stats.output.index("{"):])
    by_id = {item["id"]: item for item in figures["per_item"]}
    for row in rows:
        item = by_id[row["id"]]
        assert item["text_tokens"] == row["target"]["text_tokens"]
        assert item["tokens"]["qwen2-vl"] == row["target"]["vision_tokens"]
        assert item["ratio"]["qwen2-vl"] == row["target"]["ratio"]
    # the same run again: byte-identical rows
    again = tmp_path / "again"
    assert run("render", items_file(tmp_path), "--render", "context", "--target-ratio", 2,
               "--ratio-model", "qwen2.5-vl", "--tokenizer", minilm_folder(),
               "--out", again).exit_code == 0
    assert (again / "manifest.jsonl").read_bytes() == (out / "manifest.jsonl").read_bytes()


def test_off_target_items_are_skipped_with_on_error_skip(tmp_path):
    out = tmp_path / "run"
    result = run("render", items_file(tmp_path, 3), "--render", "context", "--vision-budget",
                 10, "--ratio-model", "qwen2-vl", "--on-error", "skip", "--out", out)
    assert result.exit_code == 0, result.output
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert len(skipped) == 3 and all("off target: even at the smallest size" in s["reason"]
                                     for s in skipped)


@pytest.mark.parametrize("args, message", [
    (["--target-ratio", "2", "--tokenizer", "x"], "need --ratio-model"),
    (["--target-ratio", "2", "--ratio-model", "qwen2-vl"], "needs --tokenizer"),
    (["--vision-budget", "256", "--ratio-model", "gemma-9"],
     "no vision-token rule for model 'gemma-9' (known: qwen2-vl"),
    (["--vision-budget", "256", "--ratio-model", "qwen2-vl", "--target-ratio", "2"],
     "not both"),
    (["--ratio-model", "qwen2-vl"], "give --target-ratio or --vision-budget"),
    (["--target-ratio", "2", "--ratio-model", "qwen2-vl", "--tokenizer", "no/such/file.json"],
     "--tokenizer no/such/file.json: no such file or folder"),
])
def test_a_target_that_cannot_be_read_is_one_line(tmp_path, args, message):
    result = run("render", items_file(tmp_path, 1), *args, "--out", tmp_path / "run")
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_unknown_model_names_a_close_one():
    with pytest.raises(UsageError, match="did you mean 'qwen2.5-vl'"):
        TargetOptions(vision_budget=64, ratio_model="qwen2.5-v")


def test_a_budget_is_met_exactly_by_moving_the_page_width_in_the_rules_steps(tmp_path):
    """Qwen's tokens come in 28 px cells: on an A4 page 768 px wide a row is 27 tokens, so
    the font size alone gives 243 or 270 for a budget of 256. Moving the page width in 28 px
    steps meets it exactly for every context; a rule of tiles says why it cannot."""
    items = items_file(tmp_path, 6)
    fixed = tmp_path / "fixed"
    assert run("render", items, "--render", "context", "--vision-budget", 256, "--ratio-model",
               "qwen2.5-vl", "--no-move-width", "--out", fixed).exit_code == 0
    rows = [json.loads(line)["target"] for line in (fixed / "manifest.jsonl").read_text()
            .splitlines()]
    assert {t["vision_tokens"] for t in rows} <= {243, 270} and not any(t["exact"] for t in rows)
    moved = tmp_path / "moved"
    assert run("render", items, "--render", "context", "--vision-budget", 256, "--ratio-model",
               "qwen2.5-vl", "--out", moved).exit_code == 0
    rows = [json.loads(line) for line in (moved / "manifest.jsonl").read_text().splitlines()]
    for row in rows:
        target = row["target"]
        assert target["exact"] and target["vision_tokens"] == 256
        assert target["moved"] == ["font_size", "page_width"]
        from mmconvert.vision_tokens import image_tokens, token_rule

        assert image_tokens(token_rule("qwen2.5-vl"), row["images"]) == 256  # as drawn
    tiles = tmp_path / "tiles"
    assert run("render", items, "--render", "context", "--vision-budget", 300, "--ratio-model",
               "internvl2.5", "--out", tiles).exit_code == 0
    reasons = [json.loads(line)["target"].get("reason", "") for line in
               (tiles / "manifest.jsonl").read_text().splitlines()]
    assert any("internvl2.5 cannot be met exactly: it counts whole tiles" in r for r in reasons)
