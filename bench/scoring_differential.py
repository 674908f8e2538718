"""One reply, one score everywhere: a differential corpus of replies whose true score is known,
scored by ``mmconvert eval`` (a real evaluation on inspect_ai, against a local server that
sends those replies) and by the code every export writes (lmms-eval's ``utils.py``, the
VLMEvalKit dataset class's ``score_file``, the inspect_ai task's scorer, ``score.py`` of the
Hugging Face and JSONL exports).

    python bench/scoring_differential.py

The replies cover every family: multiple choice in the forms models write (and the forms
that must be unparsed: two letters, two answer lines that differ, none), free-form answers
(SQuAD's exact match: an answer inside a word never counts), BABILong, LongBench (token F1),
RULER's haystacks and VCR's spans. Each reply is sent once as the image condition's answer
and once as the text condition's. Printed: replies, disagreements between eval and each
export's scorer (0), and disagreements with the truth (0 for every form; an unparsed form
must come back unparsed).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures"
LETTERS = "ABCD"
OPTIONS = [["red", "blue", "green", "yellow"], ["cat", "dog", "owl", "fox"],
           ["one", "two", "three", "four"], ["Paris", "Rome", "Oslo", "Lima"]]


@dataclass
class Form:
    """A reply's form: ``make(item) -> (reply, true score or None for unparsed)``."""

    name: str
    make: Callable[[dict], tuple[str, float | None]]


def choice_forms() -> list[Form]:
    def right_or_wrong(template: str, wrong: bool = False):
        def make(row):
            gold = row["answer"]
            letter = LETTERS[(LETTERS.index(gold) + 1) % 4] if wrong else gold
            option = row["options"][LETTERS.index(letter)]
            return (template.format(L=letter, l=letter.lower(), option=option,
                                    other=LETTERS[(LETTERS.index(letter) + 2) % 4]),
                    0.0 if wrong else 1.0)
        return make

    forms = []
    for template in ("Answer: {L}", "answer: {l}", "The answer is ({L}).", "$\\boxed{{{L}}}$",
                     "**Answer:** {L}", "Final answer: {L}", "答案：{L}", "答案是{L}", "{L}",
                     "({l})", "**{L}**", "{L}. {option}", "Answer: {option}",
                     "Let me think step by step.\nThe options differ.\nAnswer: {L}",
                     "At first I thought the answer is {other}.\nAnswer: {L}",
                     "Final answer: \\boxed{{\\text{{{L}}}}}", "正确答案为{L}。"):
        forms.append(Form(template, right_or_wrong(template)))
        forms.append(Form(template + " (wrong)", right_or_wrong(template, wrong=True)))
    for template in ("Answer: {L} or {other}", "Answer: {L}\n\nAnswer: {other}",
                     "I am not sure.", "Answer: {L}/{other}", "答案：{L}或{other}"):
        make = right_or_wrong(template)
        forms.append(Form(template + " (unparsed)",
                          lambda row, make=make: (make(row)[0], None)))
    return forms


def free_forms() -> list[Form]:
    return [
        Form("answer line", lambda r: (f"Answer: {r['answer'][0]}", 1.0)),
        Form("answer line, article and case", lambda r: (
            f"Answer: The {r['answer'][0].upper()}.", 1.0)),
        Form("reasoning then answer line", lambda r: (
            f"Let me think.\nIt is clear.\nAnswer: {r['answer'][0]}", 1.0)),
        Form("inside a word", lambda r: (f"Answer: {r['answer'][0]}ish", 0.0)),
        Form("another answer", lambda r: ("Answer: something else", 0.0)),
        Form("no answer line", lambda r: (f"It is not {r['answer'][0]}; I would say grey.",
                                          None)),
        Form("two answer lines", lambda r: (f"Answer: {r['answer'][0]}\nAnswer: grey", None)),
        Form("boxed", lambda r: (f"So \\boxed{{{r['answer'][0]}}}", 1.0)),
    ]


def babilong_forms() -> list[Form]:
    return [Form("answer line", lambda r: (f"Answer: {r['answer'][0]}", 1.0)),
            Form("first sentence", lambda r: (f"The answer: {r['answer'][0]}. Done.", 1.0)),
            Form("nothing named", lambda r: ("I do not know.", None))]


def longbench_forms() -> list[Form]:
    return [Form("answer line", lambda r: (f"Answer: {r['answer'][0]}", 1.0)),
            Form("nothing shared", lambda r: ("Answer: qqq zzz", 0.0)),
            Form("no answer line", lambda r: ("I cannot find it.", None))]


def niah_forms() -> list[Form]:
    def values(row):
        return [str(v) for v in row["answer"]]
    return [Form("all values", lambda r: ("The values are " + ", ".join(values(r)) + ".", 1.0)),
            Form("inside a longer number", lambda r: (
                "The value is " + " ".join("9" + v for v in values(r)) + ".", 0.0)),
            Form("none", lambda r: ("I found nothing.", 0.0))]


def spans_forms() -> list[Form]:
    def spans(row):
        return [s["text"] for s in row["masked_spans"]]
    return [Form("every span", lambda r: (", ".join(spans(r)), 1.0)),
            Form("no span", lambda r: ("nothing here at all", 0.0))]


# --- the runs -----------------------------------------------------------------------------

def render(args: list[str]) -> None:
    from click.testing import CliRunner

    from mmconvert.cli import main

    result = CliRunner().invoke(main, [str(a) for a in args] + ["--no-progress"])
    if result.exit_code != 0:
        raise SystemExit(f"render {args}: {result.output}")


def rows_of(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "manifest.jsonl").read_text().splitlines()]


def make_runs(tmp: Path) -> dict[str, tuple[Path, list[Form]]]:
    choice = [{"id": f"c{n:03d}", "question": f"Question number {n}: which one?",
               "options": [f"{option} {n}" for option in OPTIONS[n % 4]],
               "answer": LETTERS[n % 4]} for n in range(72)]
    free = [{"id": f"f{n:03d}", "question": f"Free question {n}?",
             "answer": [["garden", "kitchen", "Ann", "blue"][n % 4]]} for n in range(40)]
    (tmp / "choice.jsonl").write_text("".join(json.dumps(r) + "\n" for r in choice))
    (tmp / "free.jsonl").write_text("".join(json.dumps(r) + "\n" for r in free))
    runs = {"choice": (tmp / "choice", choice_forms()), "free": (tmp / "free", free_forms()),
            "babilong": (tmp / "babilong", babilong_forms()),
            "longbench": (tmp / "longbench", longbench_forms()),
            "niah": (tmp / "niah", niah_forms()), "spans": (tmp / "spans", spans_forms())}
    render(["render", tmp / "choice.jsonl", "--out", runs["choice"][0]])
    render(["render", tmp / "free.jsonl", "--out", runs["free"][0]])
    render(["render", "babilong", "--source", FIXTURES / "babilong-raw", "--out",
            runs["babilong"][0]])
    render(["render", "longbench", "--source", FIXTURES / "longbench", "--subset", "hotpotqa_e",
            "--subset", "narrativeqa", "--out", runs["longbench"][0]])
    render(["render", "niah", "--lengths", "256,512,768", "--depths", "0,25,50,75,100",
            "--needle-kind", "multi-value", "--out", runs["niah"][0]])
    render(["occlude", "captions", "--source", FIXTURES / "coco", "--out", runs["spans"][0],
            "--all-captions"])
    return runs


def plan_replies(runs) -> dict[str, dict[tuple[str, str], tuple[str, float | None, str]]]:
    """Per run, (item id, condition) -> (reply, truth, form): each item takes the forms in
    turn, its image and its text condition two forms apart."""
    plan = {}
    for name, (run, forms) in runs.items():
        replies = {}
        for n, row in enumerate(rows_of(run)):
            for k, condition in enumerate(("image", "text")):
                form = forms[(n + 2 * k) % len(forms)]
                reply, truth = form.make(row)
                replies[(row["id"], condition)] = (reply, truth, form.name)
        plan[name] = replies
    return plan


def run_eval(run: Path, replies, out: Path) -> dict[tuple[str, str], dict]:
    """mmconvert eval of ``run`` against a local server that answers each item's prompt (per
    condition) with its planned reply; the scores eval recorded, by (id, condition)."""
    import base64

    from click.testing import CliRunner

    from mmconvert.cli import main
    from tests.openai_server import FakeOpenAI

    by_prompt = {}
    for row in rows_of(run):  # an image request is told by its first image, a text one by
        first = base64.b64encode((run / row["images"][0]["path"]).read_bytes()).decode()
        for condition, key in (("image", first), ("text", row["text_prompt"])):
            by_prompt.setdefault((key, condition), []).append(row["id"])  # its prompt

    def answer(body):
        content = body["messages"][-1]["content"]
        urls = [] if isinstance(content, str) else [
            p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
        if urls:
            ids = by_prompt[(urls[0].split(",", 1)[1], "image")]
            return replies[(ids[0], "image")][0]
        text = content if isinstance(content, str) else " ".join(
            p["text"] for p in content if p.get("type") == "text")
        return replies[(by_prompt[(text, "text")][0], "text")][0]

    fake = FakeOpenAI(answer=answer, models=("reader",))
    url = fake.start()
    try:
        result = CliRunner().invoke(main, ["eval", str(run), "--model", "reader", "--base-url",
                                           url, "--out", str(out), "--modality", "image,text"])
    finally:
        fake.stop()
    if result.exit_code != 0:
        raise SystemExit(f"eval {run}: {result.output}")
    shared = {key for key, ids in by_prompt.items() if len(ids) > 1}
    got = {}
    for line in (out / "responses.jsonl").read_text().splitlines():
        row = json.loads(line)
        if any(row["id"] in by_prompt[k] for k in shared
               if k[1] == row["condition"]):  # two items sent one prompt: left out
            continue
        got[(row["id"], row["condition"])] = {"score": row["score"], "parsed": row["parsed"]}
    return got


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def export_scores(run: Path, replies, tmp: Path) -> dict[str, dict[tuple[str, str], dict]]:
    """The same replies scored by each export's own code, by (id, condition)."""
    import pandas
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from mmconvert.cli import main

    out: dict[str, dict] = {}
    for fmt in ("lmms-eval", "vlmevalkit", "hf", "jsonl"):
        folder = tmp / f"{run.name}-{fmt}"
        result = CliRunner().invoke(main, ["export", str(run), "--format", fmt, "--out",
                                           str(folder), "--name", run.name])
        if result.exit_code != 0:
            raise SystemExit(f"export {fmt}: {result.output}")
        scores: dict[tuple[str, str], dict] = {}
        if fmt == "lmms-eval":
            utils = load(folder / "utils.py", f"utils_{run.name}")
            for path in sorted((folder / "data").glob("*.parquet")):
                for doc in pq.read_table(path, columns=["id", "scoring"]).to_pylist():
                    for condition in ("image", "text"):
                        reply = replies[(doc["id"], condition)][0]
                        if "spans" in doc["scoring"]:
                            got = utils.process_spans(doc, [reply])
                            values = got["exact_match"]
                            scores[(doc["id"], condition)] = {
                                "score": sum(values) / len(values), "parsed": True}
                        else:
                            got = utils.process_results(doc, [reply])
                            scores[(doc["id"], condition)] = {"score": got["accuracy"],
                                                              "parsed": bool(got["parsed"])}
        elif fmt == "vlmevalkit":
            kit = load(folder / "mmconvert_vlmevalkit.py", f"kit_{run.name}")
            table = pandas.read_csv(folder / f"{run.name}.tsv", sep="\t",
                                    keep_default_na=False)
            for condition in ("image", "text"):
                predictions = table[["index", "id"]].copy()
                predictions["prediction"] = [replies[(i, condition)][0] for i in table["id"]]
                path = tmp / f"{run.name}-{condition}-predictions.tsv"
                predictions.to_csv(path, sep="\t", index=False)
                for key, got in kit.score_file(str(path))["items"].items():
                    scores[(key, condition)] = {"score": got["score"], "parsed": got["parsed"]}
        elif fmt == "hf":
            task = load(folder / "inspect_task.py", f"inspect_{run.name}")
            scorer = task.mmconvert_scorer()
            for row in task.rows():
                for condition in ("image", "text"):
                    state = _State(row["scoring"], replies[(row["id"], condition)][0])
                    got = asyncio.run(scorer(state, None))
                    scores[(row["id"], condition)] = {"score": got.value,
                                                      "parsed": got.metadata["parsed"]}
        else:
            tool = load(folder / "score.py", f"score_{run.name}")
            for condition in ("image", "text"):
                path = tmp / f"{run.name}-{condition}-predictions.jsonl"
                path.write_text("".join(json.dumps({"id": key[0], "response": value[0]}) + "\n"
                                        for key, value in replies.items()
                                        if key[1] == condition))
                for key, got in tool.score_file(str(path)).items():
                    scores[(key, condition)] = {"score": got["score"], "parsed": got["parsed"]}
        out[fmt] = scores
    return out


class _Output:
    def __init__(self, completion: str):
        self.completion = completion


class _State:
    """What an inspect_ai scorer reads of a task state: its metadata and output."""

    def __init__(self, scoring: str, reply: str):
        self.metadata = {"scoring": scoring}
        self.output = _Output(reply)


def same(a: dict, b: dict) -> bool:
    return a["parsed"] == b["parsed"] and abs(a["score"] - b["score"]) < 1e-9


def truth_agrees(got: dict, truth: float | None) -> bool:
    if truth is None:
        return not got["parsed"] and got["score"] == 0.0
    return got["parsed"] and abs(got["score"] - truth) < 1e-9


def differential(tmp: Path) -> dict[str, Any]:
    runs = make_runs(tmp)
    plan = plan_replies(runs)
    report: dict[str, Any] = {"replies": 0, "families": {}, "eval_vs_export": {},
                              "vs_truth": {}, "examples": []}
    for name, (run, _) in runs.items():
        replies = plan[name]
        evaluated = run_eval(run, replies, tmp / f"{name}-eval")
        exports = export_scores(run, replies, tmp)
        report["replies"] += len(evaluated)
        report["families"][name] = len(evaluated)
        for key, got in evaluated.items():
            reply, truth, form = replies[key]
            if not truth_agrees(got, truth):
                report["vs_truth"]["eval"] = report["vs_truth"].get("eval", 0) + 1
                report["examples"].append(f"eval vs truth: {name} {key} {form!r}: {got}")
            for fmt, scores in exports.items():
                other = scores.get(key)
                if other is None or not same(got, other):
                    report["eval_vs_export"][fmt] = report["eval_vs_export"].get(fmt, 0) + 1
                    report["examples"].append(f"eval vs {fmt}: {name} {key} {form!r}: {got} "
                                              f"{other}")
                if other is not None and not truth_agrees(other, truth):
                    report["vs_truth"][fmt] = report["vs_truth"].get(fmt, 0) + 1
    return report


def main() -> None:
    os.environ.setdefault("INSPECT_LOG_LEVEL", "error")
    with tempfile.TemporaryDirectory(prefix="mmconvert-differential-") as tmp:
        report = differential(Path(tmp))
    print(f"differential: {report['replies']} replies, by family: "
          + ", ".join(f"{k} {v}" for k, v in report["families"].items()))
    for fmt in ("lmms-eval", "vlmevalkit", "hf", "jsonl"):
        print(f"  eval vs {fmt:<11} disagreements {report['eval_vs_export'].get(fmt, 0)}")
    for who in ("eval", "lmms-eval", "vlmevalkit", "hf", "jsonl"):
        print(f"  {who:<11} vs truth     disagreements {report['vs_truth'].get(who, 0)}")
    for line in report["examples"][:20]:
        print("  " + line)
    sys.exit(1 if report["examples"] else 0)


if __name__ == "__main__":
    main()
