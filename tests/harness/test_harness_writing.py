"""What ``mmconvert harness`` writes is safe to import and never lost (issue 53's attack run):
a task name is held in the written module only as an escaped literal and its functions'
names are identifiers (a dotted name compiled to nothing), a kept task index is trusted only
when well formed, a folder holds one write, a user's own recipe.yaml is never replaced, a
style file is named by its absolute path, and a recipe drawn through a paid API is never
drawn to check its fingerprint unasked."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

from mmconvert.harness import check_task_name, file_stem, identifier, module_text
from tests.openai_server import FakeOpenAI
from tests.test_cli import run

pytest.importorskip("lm_eval")
ROOT = Path(__file__).resolve().parents[2]
LM = ROOT / "tests" / "fixtures" / "lm-eval"


def functions(module: str) -> set[str]:
    return {node.name for node in ast.parse(module).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_names_are_literals_and_identifiers_in_the_written_module():
    names = ["bertaqa_en_mt_latxa-7b-v1.1", "bertaqa_en_mt_latxa-7b-v1_1",
             "darijammlu_arabic_language_(general)", "x'); import os; os.system('id'); ('",
             "ünïcode"]
    text = module_text(names)
    tree = ast.parse(text)  # it compiles
    calls = [node for node in tree.body if isinstance(node, ast.Assign)]
    assert [call.value.args[1].value for call in calls[1:]] == names  # literals, each whole
    assert not any(isinstance(node, (ast.Import, ast.ImportFrom)) and
                   node.names[0].name == "os" for node in tree.body)
    keys = [identifier(name) for name in names]
    assert all(key.isidentifier() and key.isascii() for key in keys)
    assert len(set(keys)) == len(names)  # a dot and an underscore never share a function
    assert {f"images_{key}" for key in keys} <= functions(text)
    assert file_stem("a/b") != "a/b" and "/" not in file_stem("a/b")
    for bad in ("arc_easy\nimport os", "../x", "a\\b", ".hidden", ""):
        with pytest.raises(Exception, match="not a name lm-eval gives"):
            check_task_name(bad)


def test_a_dotted_task_is_written_as_a_module_that_names_its_functions(tmp_path):
    task = "bertaqa_en_mt_latxa-7b-v1.1"
    result = run("harness", "lm-eval", f"{task},arc_easy", "--recipe", "readbench",
                 "--out", tmp_path / "t")
    assert result.exit_code == 0, result.output
    module = (tmp_path / "t" / "mmconvert_harness.py").read_text()
    defined = functions(module)
    named = []
    for path in (tmp_path / "t").glob("*.yaml"):
        if path.name == "recipe.yaml":
            continue
        named += re.findall(r"!function '?mmconvert_harness\.(\w+)'?", path.read_text())
    assert named and set(named) <= defined


def test_a_tampered_index_is_indexed_again():
    from importlib.util import find_spec

    from mmconvert.corpora.lmeval import task_index, well_formed

    folder = Path(next(iter(find_spec("lm_eval").submodule_search_locations))) / "tasks"
    entries = task_index()
    assert well_formed(entries, folder)
    name, entry = next(iter(entries.items()))
    for tampered in ({**entries, "arc_easy\nimport os": entry},
                     {**entries, name: ("TASK", "/etc/passwd", ())},
                     {**entries, name: ("EVIL", entry[1], entry[2])},
                     {**entries, name: (entry[0], entry[1], ("a/../b",))}):
        assert not well_formed(tampered, folder)


def test_a_folder_holds_one_write_and_a_user_s_files_are_kept(tmp_path):
    out = tmp_path / "tasks"
    first = run("harness", "lm-eval", "arc_easy", "--recipe", "readbench", "--source", LM,
                "--out", out)
    assert first.exit_code == 0, first.output
    files = {p.name: p.read_bytes() for p in out.iterdir()}
    again = run("harness", "lm-eval", "arc_easy", "--recipe", "readbench", "--source", LM,
                "--out", out)  # the same write again: written as it was
    assert again.exit_code == 0, again.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files
    for other in (["gsm8k", "--recipe", "readbench"], ["arc_easy", "--recipe", "glyph"]):
        refused = run("harness", "lm-eval", other[0], *other[1:], "--source", LM, "--out", out)
        assert refused.exit_code == 2
        assert refused.output == (f"Error: --out {out}: holds the tasks of another harness "
                                  "write (arc_easy, recipe readbench); write these into "
                                  "another folder (one folder holds one write)\n")
        assert {p.name: p.read_bytes() for p in out.iterdir()} == files
    own = tmp_path / "own"
    own.mkdir()
    (own / "recipe.yaml").write_text("my own notes\n")
    refused = run("harness", "lm-eval", "arc_easy", "--recipe", "readbench", "--out", own)
    assert refused.exit_code == 2 and "holds files mmconvert harness did not write " \
        "(recipe.yaml)" in refused.output
    assert (own / "recipe.yaml").read_text() == "my own notes\n"


def test_a_style_file_is_named_by_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("mystyle.yaml").write_text("font_size: {uniform: [9, 14]}\n")
    Path("spec.yaml").write_text("name: mine\nstyle: mystyle.yaml\n")
    assert run("recipe", "make", "spec.yaml", "--out", "mine.yaml").exit_code == 0
    result = run("harness", "lm-eval", "arc_easy", "--recipe", "mine.yaml", "--out", "t")
    assert result.exit_code == 0 and "warning" not in result.output, result.output
    written = yaml.safe_load(Path("t/recipe.yaml").read_text())
    assert written["style"] == str(tmp_path / "mystyle.yaml")


def test_a_paid_recipe_is_never_drawn_unasked(tmp_path, monkeypatch):
    """A recipe drawn by the generate renderer: verify, render's fingerprint check and the
    harness's each drew its reference items through the chat API with the user's key."""
    data = yaml.safe_load((ROOT / "mmconvert" / "recipes" / "readbench.yaml").read_text())
    data.update(name="paid", renderer="generate")
    data.pop("style"), data.pop("options")
    recipe = tmp_path / "paid.yaml"
    recipe.write_text(yaml.safe_dump(data))
    fake = FakeOpenAI(models=("gpt-image-1",))
    url = fake.start()
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-written-0123456789")
    try:
        verified = run("recipe", "verify", recipe)
        written = run("harness", "lm-eval", "arc_easy", "--recipe", recipe, "--out",
                      tmp_path / "t")
    finally:
        fake.stop()
    assert fake.requests() == []
    assert verified.exit_code == 2
    assert verified.output.splitlines()[0] == (
        f"{recipe}: not verified: its generate renderer draws through a paid API: verifying "
        "draws its 4 reference item(s) there; --allow-paid does, nothing is sent without it")
    assert written.exit_code == 0, written.output
    record = json.loads((tmp_path / "t" / "harness.json").read_text())
    assert record["recipe_fingerprint"].startswith(
        "recipe paid: its fingerprint is not checked here: its generate renderer draws "
        "through a paid API")


def test_an_untested_harness_version_is_one_warning_line(monkeypatch, capsys):
    import importlib.metadata

    from mmconvert.harness import TESTED, runtime, untested

    assert untested("lmms-eval", TESTED["lmms-eval"]) is None
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.7.2")
    runtime.check_version()
    said = capsys.readouterr().err.splitlines()
    assert said == ["mmconvert harness: warning: lmms-eval 0.7.2 is not the version "
                    "mmconvert's tests run (0.7.3); its prompts, pages or scores may differ"]
    assert "(version unknown)" in untested("vlmeval", None)
    assert "(0.2rc1)" in untested("vlmeval", "0.1.0")


def test_a_num_fewshot_the_written_tasks_do_not_take_is_one_line(tmp_path, monkeypatch, capsys):
    """lm-eval and lmms-eval ignore ``--num_fewshot`` for a task whose YAML sets 0, with a
    line at INFO: the written multiple-choice tasks (lm-eval), and every lmms-eval task, whose
    prompt holds the original's own examples. Each is said on stderr in one line."""
    from mmconvert.harness import runtime

    for harness in ("lm-eval", "lmms-eval"):
        folder = tmp_path / harness
        assert run("harness", harness, "arc_easy,gsm8k", "--recipe", "readbench",
                   "--source", LM, "--out", folder).exit_code == 0
    program = ["/x/lm_eval/__main__.py", "--tasks",
               "mmconvert_arc_easy,mmconvert_arc_easy_text,mmconvert_gsm8k", "--num_fewshot"]
    monkeypatch.setattr(runtime, "_SAID", set())
    monkeypatch.setattr("sys.argv", [*program, "2"])
    runtime.fewshot_notice(tmp_path / "lm-eval", ",".join(program[2:3]))
    assert capsys.readouterr().err.splitlines() == [
        "mmconvert harness: --num_fewshot 2 is not used for mmconvert_arc_easy: a "
        "multiple-choice task is asked with no few-shot examples (an example's answer would "
        "be the letter of an option only its page shows)"]
    runtime.fewshot_notice(tmp_path / "lmms-eval", "mmconvert_gsm8k")
    assert capsys.readouterr().err.splitlines() == [
        "mmconvert harness: --num_fewshot 2 is not used for mmconvert_gsm8k: its prompt holds "
        "gsm8k's own few-shot examples (5), as lm-eval writes them"]
    monkeypatch.setattr("sys.argv", [*program, "0"])
    monkeypatch.setattr(runtime, "_SAID", set())
    runtime.fewshot_notice(tmp_path / "lm-eval", ",".join(program[2:3]))
    assert capsys.readouterr().err == ""
