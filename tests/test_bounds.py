"""Every input is bounded in memory and time: what would take gigabytes or minutes is refused
up front in one line naming the limit (a style or config file's aliases, a haystack's length,
a needle template's format, a file too big to be options)."""

from __future__ import annotations

import json
import time

import pytest

from tests.test_cli import run

BOMB = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x]",
                  *(f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)}, *{chr(97 + n)}, "
                    f"*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, "
                    f"*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}]" for n in range(8)),
                  "font_size: {choice: *i}"])


@pytest.fixture()
def items(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "q?", "options": ["x", "y"],
                                "answer": "A"}) + "\n")
    return path


def one_line(result, exit_code: int, said: str) -> None:
    assert result.exit_code == exit_code, result.output
    assert said in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_an_alias_bomb_in_a_style_file_or_a_config_is_refused_at_once(items, tmp_path):
    style = tmp_path / "bomb.yaml"
    style.write_text(BOMB)
    started = time.monotonic()
    one_line(run("render", items, "--style", style, "--out", tmp_path / "s"), 2,
             "option files take no anchors or aliases")
    config = tmp_path / "config.yaml"
    config.write_text(BOMB.replace("font_size: {choice: *i}", "page: {ppi: 92.9}"))
    one_line(run("render", items, "--config", config, "--out", tmp_path / "c"), 2,
             "an alias (*a) at line 2")
    assert time.monotonic() - started < 10


def test_a_style_file_past_a_megabyte_is_refused_unread(items, tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as handle:
        handle.truncate(1 << 30)  # sparse
    one_line(run("render", items, "--style", big, "--out", tmp_path / "b"), 2,
             "over the 1,048,576 bytes a style file may hold")


@pytest.mark.parametrize(("flags", "said"), [
    (["--lengths", "1000000000"], "1,000,000,000 is over the longest haystack, 1,048,576"),
    (["--lengths", "1" * 400], "is not a length (e.g. 1k, 4k, 1500; at most 1,048,576)"),
    (["--needle", "{key} {value:>1500000000}"], "{value:>1500000000} is not {key} or {value}"),
    (["--needle", "{other} {key} {value}"], "{other} is not {key} or {value}"),
    (["--needle", "{key} {value} {"], "Single '{' encountered in format string"),
    (["--needle", "{key} {value!r}"], "{value!r} is not {key} or {value}"),
    (["--needle", "{key} only"], "a needle template needs {key} and {value}"),
])
def test_haystack_lengths_and_needle_templates_are_bounded(flags, said, tmp_path):
    started = time.monotonic()
    one_line(run("render", "niah", *flags, "--out", tmp_path / "n"), 2, said)
    assert time.monotonic() - started < 10


def test_a_needle_template_with_braces_written_double_is_taken(tmp_path):
    result = run("render", "niah", "--needle", "{{x}} {key} is {value}.", "--lengths", "256",
                 "--depths", "50", "--out", tmp_path / "n")
    assert result.exit_code == 0, result.output
