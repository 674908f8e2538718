"""Harness tasks: lm-evaluation-harness (and lmms-eval) tasks that render each doc on the fly
with a recipe, run and scored by the harness itself.

``mmconvert harness lm-eval TASK[,TASK...] --recipe R --out DIR`` writes, for each task, two
tasks into DIR (lm-eval's ``--include_path``):

- ``mmconvert_<task>``: the task's own dataset and splits; its ``doc_to_image`` draws each doc
  with the recipe (``harness.runtime``), and its ``doc_to_text`` asks about the image;
- ``mmconvert_<task>_text``: its text twin.

A generation task keeps its own prompt (the drawn part replaced by "(see the image)"), few-shot
examples (as text, through ``fewshot_config``), generation settings, filters and metrics. A
multiple-choice task, which lm-eval scores by the likelihood of each choice, is asked as
``render lm-eval:TASK`` asks it, for a lettered answer, and scored by a lm-eval ``custom`` filter
that reads the letter as ``mmconvert eval`` does (``scoring.answers``) and lm-eval's own
``exact_match``. The folder holds the YAML files, ``mmconvert_harness.py`` (what the YAML's
``!function`` entries name: thin calls into ``mmconvert.harness.runtime``), the recipe and
``harness.json``; every doc's pages, text and vision tokens go to ``tokens/<task>.jsonl``, and
beside lm-eval's own sample logs when it writes them (``--output_path``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import SourceError, UsageError, did_you_mean
from ..items import safe_name
from ..locks import locked
from ..manifest import atomic_write

PREFIX = "mmconvert_"
LM_EVAL, LMMS_EVAL = "lm-eval", "lmms-eval"
MODULE = "mmconvert_harness"
# lm-eval's multimodal backends: those that send a doc's images to the model
MULTIMODAL_BACKENDS = ("local-chat-completions", "openai-chat-completions", "hf-multimodal",
                       "vllm-vlm")
# the versions of the harnesses (by distribution name) the tests run; another gets one warning
# line naming the tested one (VLMEvalKit is not on PyPI: its package's __version__, at commit
# e8e78f0 of open-compass/VLMEvalKit)
TESTED = {"lmms-eval": "0.7.3", "vlmeval": "0.2rc1"}


def untested(name: str, found: str | None) -> str | None:
    """The warning line for harness ``name`` at version ``found``, or None at the tested one."""
    if found == TESTED[name]:
        return None
    return (f"mmconvert harness: warning: {name} {found or '(version unknown)'} is not the "
            f"version mmconvert's tests run ({TESTED[name]}); its prompts, pages or scores "
            "may differ")


# the task config keys a written task takes over as they are
KEPT = ("dataset_path", "dataset_name", "training_split", "validation_split", "test_split",
        "fewshot_split", "target_delimiter", "fewshot_delimiter")
GENERATION_KEPT = ("description", "num_fewshot", "generation_kwargs", "filter_list",
                   "metric_list", "repeats")


def task_names(given: str) -> list[str]:
    """The leaf tasks ``given`` (comma-separated tasks, groups or tags) names, as lm-eval's
    index knows them; an unknown name is one line with a did-you-mean."""
    from ..corpora.lmeval import task_config, task_index

    index = task_index()
    out: list[str] = []
    for name in (n.strip() for n in given.split(",") if n.strip()):
        if name not in index:
            raise UsageError(f"lm-eval has no task, group or tag {name!r}"
                             + did_you_mean(name, list(index)))
        if task_config(name) is not None:
            out.append(name)
            continue
        leaves = [t for t in _leaves(index, name) if task_config(t) is not None]
        if not leaves:
            raise UsageError(f"lm-eval's {name} holds no task mmconvert can write")
        out.extend(leaves)
    if not out:
        raise UsageError("name at least one lm-eval task")
    return list(dict.fromkeys(out))


def _leaves(index: dict[str, tuple[str, str | None, tuple[str, ...]]], name: str) -> list[str]:
    """The tasks under group or tag ``name`` (its YAML's ``task`` list, or the tasks that
    carry the tag)."""
    kind, path, _ = index[name]
    found: list[str] = []
    if kind == "GROUP" and path:
        from lm_eval.tasks._yaml_loader import load_yaml

        listed = load_yaml(Path(path), resolve_func=False).get("task") or []
        for child in listed:
            child = child.get("task") if isinstance(child, dict) else child
            if isinstance(child, str) and child in index:
                found += [child] if index[child][0] == "TASK" else _leaves(index, child)
    else:
        found = [task for task, (kind, _, tags) in index.items()
                 if kind == "TASK" and name in tags]
    return found


def task_data_folder(source: Path, config: dict[str, Any]) -> Path:
    """The folder under ``source`` holding a task's dataset (``corpora.lmeval.dataset_folder``,
    the layout ``render lm-eval:TASK --source`` reads too)."""
    from ..corpora.lmeval import dataset_folder as folder_of

    return folder_of(source, str(config.get("dataset_path") or ""),
                     config.get("dataset_name"))


def data_files(source: Path, config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """For a local copy of a task's dataset: the ``datasets`` builder and ``data_files`` the
    written task loads it with (every file absolute), as ``render lm-eval:TASK --source``
    reads it."""
    from ..corpora.lmeval import BUILDERS, local_files

    files = local_files(source, str(config.get("dataset_path")), config.get("dataset_name"))
    if not files:
        raise SourceError(f"{source}: no files of {config.get('dataset_path')} "
                          f"{config.get('dataset_name') or ''} in the hub's layout")
    suffixes = {Path(f).suffix.lower() for names in files.values() for f in names}
    builder = BUILDERS.get(next(iter(suffixes)), "parquet")
    return builder, {split: [str(Path(f).resolve()) for f in names]
                     for split, names in files.items()}


class Function(str):
    """A ``!function module.name`` entry of a task's YAML (lm-eval imports it)."""


def function(name: str) -> Function:
    return Function(f"{MODULE}.{name}")


def yaml_text(data: dict[str, Any]) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(Function, lambda dumper, value: dumper.represent_scalar(
        "!function", str(value)))
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=96)


def task_yaml(task: str, config: dict[str, Any], source: Path | None, *,
              image: bool, harness: str = LM_EVAL) -> dict[str, Any]:
    """The written task's config: the original's dataset and splits, and for an image task
    mmconvert's ``doc_to_image`` (lmms-eval: ``doc_to_visual``) and ``doc_to_text``.

    For lmms-eval, whose few-shot examples would be drawn with the image task's own
    ``doc_to_text``, the prompt holds them itself (as lm-eval's ``fewshot_context`` writes
    them, the task's description first), and the task asks for none; its text twin's
    ``doc_to_visual`` gives no image; the letter filter is a filter class."""
    lmms = harness == LMMS_EVAL
    key = identifier(task)
    out: dict[str, Any] = {"task": f"{PREFIX}{task}" + ("" if image else "_text"),
                           "tag": [f"{PREFIX}{'image' if image else 'text'}"]}
    for name in KEPT:
        if config.get(name) is not None:
            out[name] = config[name]
    if source is not None:
        builder, files = data_files(task_data_folder(source, config), config)
        out["dataset_path"] = builder
        out.pop("dataset_name", None)
        out["dataset_kwargs"] = {"data_files": files}
    if config.get("process_docs") is not None:
        out["process_docs"] = function(f"process_docs_{key}")
    out["output_type"] = "generate_until"
    generation = config.get("output_type") == "generate_until"
    kind = "image" if image else "text"
    out["doc_to_text"] = function(f"{'lmms_' if lmms else ''}{kind}_prompt_{key}")
    if lmms:
        out["doc_to_visual"] = function(f"images_{key}" if image else "no_images")
    elif image:
        out["doc_to_image"] = function(f"images_{key}")
    out["doc_to_target"] = function(f"target_{key}")
    if generation:
        for name in GENERATION_KEPT:
            if config.get(name) is not None:
                out[name] = config[name]
        if lmms:  # the prompt holds the examples and the description
            out.pop("description", None)
            out["num_fewshot"] = 0
            check_filters(task, out.get("filter_list") or [])
        else:
            fewshot = dict(config.get("fewshot_config") or {})
            fewshot["doc_to_text"] = function(f"fewshot_prompt_{key}")
            out["fewshot_config"] = fewshot
    else:  # asked for the letter of an option, as mmconvert's prompts ask it
        out["num_fewshot"] = 0
        out["generation_kwargs"] = {"until": [], "do_sample": False, "temperature": 0.0}
        letter = ({"function": function(f"Letter_{key}")} if lmms else
                  {"function": "custom", "filter_fn": function(f"letter_{key}")})
        out["filter_list"] = [{"name": "letter", "filter": [letter,
                                                            {"function": "take_first"}]}]
        out["metric_list"] = [{"metric": "exact_match", "aggregation": "mean",
                               "higher_is_better": True}]
    out["metadata"] = {"version": 1.0, "mmconvert": {"task": task, "image": image}}
    return out


# the filters lmms-eval knows by name (its filters' registry)
LMMS_FILTERS = ("take_first", "regex", "majority_vote", "take_first_k", "remove_whitespace",
                "lowercase", "uppercase", "map", "multi_choice_regex")


def check_filters(task: str, filters: list[dict[str, Any]]) -> None:
    """A task whose filters lmms-eval does not have is refused in one line."""
    for ensemble in filters:
        for step in ensemble.get("filter") or []:
            name = step.get("function")
            if isinstance(name, str) and name not in LMMS_FILTERS:
                raise UsageError(f"lm-eval task {task}: its filter {ensemble.get('name')!r} "
                                 f"uses {name!r}, which lmms-eval does not have (it has "
                                 f"{', '.join(LMMS_FILTERS)})")


def _digest(name: str) -> str:
    import hashlib

    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def identifier(task: str) -> str:
    """The part of the written functions' names that stands for ``task``: the name with
    each character a Python identifier cannot hold as '_', and, when any was replaced, 8 hex
    digits of its sha256 (``bertaqa_en_mt_latxa-7b-v1.1`` and a name that differs from it
    only there never share a function)."""
    import re

    plain = re.sub(r"\W", "_", task, flags=re.ASCII)
    return plain if plain == task else f"{plain}_{_digest(task)}"


def file_stem(task: str) -> str:
    """The written YAML files' name for ``task``: itself when it is a file name, else its
    other characters as '_' and 8 hex digits of its sha256 (a '/' never makes a folder)."""
    plain = safe_name(task, "task")
    return plain if plain == task else f"{plain}-{_digest(task)}"


def check_task_name(task: str) -> str:
    """A task name as lm-eval's index gives them (``corpora.lmeval.task_name_ok``), or one
    line."""
    from ..corpora.lmeval import task_name_ok

    if not task_name_ok(task):
        raise UsageError(f"lm-eval task name {ascii(task)}: not a name lm-eval gives (no "
                         "control characters or path separators)")
    return task


def module_text(tasks: list[str], harness: str = LM_EVAL) -> str:
    """``mmconvert_harness.py``: the functions the written YAML files name, each a call into
    ``mmconvert.harness.runtime`` with its task."""
    lines = ['"""Written by mmconvert harness: the functions its tasks\' YAML files name. Each',
             'calls mmconvert.harness.runtime with its task; harness.json, beside this file,',
             'says with which recipe and data."""', "",
             "from pathlib import Path", "",
             "from mmconvert.harness import runtime", "",
             "HERE = Path(__file__).resolve().parent",
             "runtime.check_backend(HERE)",
             *(["runtime.check_version()"] if harness == LMMS_EVAL else []),
             "runtime.one_kind_a_batch()", ""]
    if harness == LMMS_EVAL:
        lines += ["", "def no_images(doc):", "    return []", ""]
    # plain functions (lm-eval deep-copies a task's config, which a bound method's object,
    # holding a lock, would not survive)
    for task in tasks:
        key = identifier(task)
        lines += ["", f"# {ascii(task)}", f"_{key} = runtime.harness(HERE, {ascii(task)})"]
        names = (("lmms_image_prompt", "doc"), ("lmms_text_prompt", "doc")) \
            if harness == LMMS_EVAL else (("image_prompt", "doc"), ("text_prompt", "doc"),
                                          ("fewshot_prompt", "doc"), ("letter", "resps, docs"))
        for name, args in (*names, ("images", "doc"), ("target", "doc"),
                           ("process_docs", "dataset")):
            lines += ["", "", f"def {name}_{key}({args}):",
                      f"    return _{key}.{name}({args})"]
        if harness == LMMS_EVAL:  # lmms-eval makes a filter of a class
            lines += ["", "", f"class Letter_{key}:",
                      "    def __init__(self, *args, **kwargs):", "        pass", "",
                      "    def apply(self, resps, docs):",
                      f"        return _{key}.letter(resps, docs)"]
    return "\n".join(lines) + "\n"


def write_tasks(tasks: list[str], recipe: str, out: Path, *, harness: str = LM_EVAL,
                source: Path | None = None, prompt_style: str | None = None,
                tokenizer: str | None = None, models: list[str] | None = None
                ) -> dict[str, Any]:
    """Write the ``harness`` tasks (lm-eval's or lmms-eval's) for ``tasks`` drawn with
    ``recipe`` into ``out``; returns ``harness.json``'s record."""
    from ..corpora.lmeval import TAKES, task_config, task_index
    from ..recipes import dump
    from ..recipes.resolve import resolve_config

    resolved = resolve_config([], recipe=recipe)  # the recipe, and its fingerprint's note
    found, note = resolved.recipe, resolved.note
    assert found is not None
    configs = {}
    for task in tasks:
        check_task_name(task)
        config = task_config(task)
        if config is None:
            raise UsageError(f"lm-eval task {task}: not a task of one YAML file")
        kind = config.get("output_type", TAKES[0])
        if kind not in TAKES:
            raise UsageError(f"lm-eval task {task} is a {kind} task; mmconvert takes "
                             f"{' and '.join(TAKES)} tasks")
        if config.get("doc_to_image") is not None:
            raise UsageError(f"lm-eval task {task} already gives images; mmconvert takes text "
                             "tasks")
        configs[task] = config
    written = [task_yaml(task, config, source, image=image, harness=harness)
               for task, config in configs.items() for image in (True, False)]
    found = absolute_style(found)  # lm-eval may run from any folder

    record = {"mmconvert": __version__, "harness": harness, "recipe": found.name,
              "recipe_fingerprint": note or ("identical" if found.references else "none"),
              "tasks": {task: {"image": f"{PREFIX}{task}", "text": f"{PREFIX}{task}_text",
                               "output_type": configs[task].get("output_type"),
                               "yaml": str(task_index()[task][1]),
                               "num_fewshot": configs[task].get("num_fewshot"),
                               "source": str(task_data_folder(source, configs[task]).resolve())
                               if source is not None else None}
                        for task in configs},
              "source": str(source.resolve()) if source is not None else None,
              "prompt_style": prompt_style, "tokenizer": tokenizer, "models": models}
    recipe_text = dump(found)
    with locked(out / LOCK, out):  # everything refused before anything is written
        check_folder(out, record, recipe_text)
        for data in written:
            name = file_stem(data["metadata"]["mmconvert"]["task"]) + \
                ("" if data["metadata"]["mmconvert"]["image"] else "_text")
            atomic_write(out / f"{PREFIX}{name}.yaml", yaml_text(data).encode("utf-8"))
        atomic_write(out / f"{MODULE}.py", module_text(list(configs), harness).encode("utf-8"))
        atomic_write(out / "recipe.yaml", recipe_text.encode("utf-8"))
        atomic_write(out / "harness.json",
                     (json.dumps(record, indent=1) + "\n").encode("utf-8"))
    return record


# held while a harness folder is written: two writes at once are one at a time
LOCK = ".mmconvert-harness.lock"


def check_folder(out: Path, record: dict[str, Any], recipe_text: str) -> None:
    """``out`` may take this write: a new or empty folder, or one an earlier harness write
    made with the same tasks, recipe and settings (written again as they were). Anything else
    is one line: a folder of the user's own files (a ``recipe.yaml`` of theirs is never
    replaced), or another write's tasks, whose YAML names functions this module would not
    hold."""
    present = sorted(p.name for p in out.iterdir() if p.name != LOCK) if out.is_dir() else []
    if not present:
        return
    kept = out / "harness.json"
    if not kept.is_file():
        shown = ", ".join(present[:3]) + (", ..." if len(present) > 3 else "")
        raise UsageError(f"--out {out}: holds files mmconvert harness did not write ({shown});"
                         " choose an empty or new folder")
    try:
        earlier = json.loads(kept.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"--out {out}: its harness.json cannot be read ({err}); choose "
                         "another folder") from None
    same = ("harness", "recipe", "tasks", "source", "prompt_style", "tokenizer", "models")
    recipe_file = out / "recipe.yaml"
    if not isinstance(earlier, dict) or any(earlier.get(k) != record[k] for k in same) or \
            not recipe_file.is_file() or recipe_file.read_text(encoding="utf-8") != recipe_text:
        tasks = ", ".join(earlier.get("tasks") or []) if isinstance(earlier, dict) else "?"
        raise UsageError(f"--out {out}: holds the tasks of another harness write ({tasks}, "
                         f"recipe {earlier.get('recipe') if isinstance(earlier, dict) else '?'}"
                         "); write these into another folder (one folder holds one write)")


def absolute_style(recipe):
    """``recipe`` with a style file it names by a relative path named by its absolute one."""
    style = recipe.style
    if isinstance(style, str) and Path(style).suffix.lower() in (".yaml", ".yml", ".json") \
            and Path(style).is_file() and not Path(style).is_absolute():
        return recipe.model_copy(update={"style": str(Path(style).resolve())})
    return recipe
