"""``mmconvert harness``: lm-eval and lmms-eval tasks that draw each doc with a recipe."""

from __future__ import annotations

from pathlib import Path

import click

from ..command_base import reports_errors
from ..tokens import load_tokenizer
from ..vision_tokens import rules_for
from . import LM_EVAL, LMMS_EVAL, task_names, write_tasks

COMMON = [
    click.argument("tasks", metavar="TASK[,TASK...]"),
    click.option("--recipe", required=True, metavar="NAME|FILE",
                 help="The recipe each doc is drawn with (mmconvert list recipes)."),
    click.option("--source", type=click.Path(path_type=Path, exists=True, file_okay=False),
                 help="A local copy of the tasks' datasets in the hub's layout (as render "
                      "lm-eval:TASK --source reads it); the tasks then load it, offline."),
    click.option("--out", "-o", type=click.Path(path_type=Path, file_okay=False),
                 required=True, help="Folder to write the tasks into."),
    click.option("--prompt-style", type=click.Choice(["cot", "direct"]),
                 help="The prompt style of multiple-choice tasks (default: the recipe's, "
                      "else cot)."),
    click.option("--tokenizer", metavar="TOKENIZER",
                 help="Count each doc's text tokens too (a tokenizer.json, a folder, a hub id "
                      "in the local cache, or tiktoken:NAME)."),
    click.option("--models", metavar="M1,M2",
                 help="The models whose vision tokens each doc's pages are counted for "
                      "(default: mmconvert stats's main rules)."),
]


def common(fn):
    for decorator in reversed(COMMON):
        fn = decorator(fn)
    return fn


@click.group("harness")
def harness_group():
    """Tasks for the evaluation harnesses that draw each doc with a recipe as the harness
    runs, keeping the task's own data, prompts, few-shot examples, filters and metrics."""


@harness_group.command("lm-eval")
@common
@reports_errors
def lm_eval_command(tasks, recipe, source, out, prompt_style, tokenizer, models):
    """Write lm-evaluation-harness tasks for TASK (tasks, groups or tags, comma-separated):
    for each, mmconvert_<task>, whose doc_to_image draws each doc with the recipe, and its text
    twin mmconvert_<task>_text. Run them with lm-eval's own CLI and a multimodal backend.

    \b
    Examples:
      mmconvert harness lm-eval arc_easy,gsm8k --recipe readbench --out tasks/
      lm_eval --model local-chat-completions --apply_chat_template \\
        --model_args model=M,base_url=http://127.0.0.1:8000/v1/chat/completions,max_images=4 \\
        --tasks mmconvert_arc_easy,mmconvert_arc_easy_text --include_path tasks/
    """
    write(LM_EVAL, tasks, recipe, source, out, prompt_style, tokenizer, models)


@harness_group.command("lmms-eval")
@common
@reports_errors
def lmms_eval_command(tasks, recipe, source, out, prompt_style, tokenizer, models):
    """Write lmms-eval tasks for TASK (lm-eval tasks, groups or tags, comma-separated): for
    each, mmconvert_<task>, whose doc_to_visual draws each doc with the recipe, and its text
    twin mmconvert_<task>_text (no image). The prompt holds the task's description and
    few-shot examples (as text), as lm-eval writes them. lm-eval's TaskManager builds the
    original task inside lmms-eval: install mmconvert[lm-eval] beside it.

    
    Example:
      mmconvert harness lmms-eval gsm8k --recipe glyph --out tasks/
      lmms-eval --model openai --model_args model_version=M --tasks mmconvert_gsm8k \
        --include_path tasks/
    """
    write(LMMS_EVAL, tasks, recipe, source, out, prompt_style, tokenizer, models)


def write(harness, tasks, recipe, source, out, prompt_style, tokenizer, models):
    names = task_names(tasks)
    wanted = [m.strip() for m in models.split(",") if m.strip()] if models else None
    if wanted:
        rules_for(wanted)  # an unknown model: one line, now
    if tokenizer:
        load_tokenizer(tokenizer)
    record = write_tasks(names, recipe, out, harness=harness, source=source,
                         prompt_style=prompt_style, tokenizer=tokenizer, models=wanted)
    if record["recipe_fingerprint"] not in ("identical", "none"):
        click.echo(f"warning: {record['recipe_fingerprint']}", err=True)
    listed = ", ".join(f"{t['image']}, {t['text']}" for t in record["tasks"].values())
    program = "lm_eval" if harness == LM_EVAL else "lmms-eval"
    click.echo(f"{len(record['tasks'])} task(s) written to {out}: {listed}; run them with "
               f"{program} --include_path {out}", err=True)


def harness_command() -> click.Group:
    return harness_group
