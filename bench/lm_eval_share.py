"""The share of lm-eval's multiple-choice task configs that ``render lm-eval:TASK`` converts
with no code of ours: each config is built offline by lm-eval's own TaskManager, on a dataset
of one doc of its schema, and that doc is converted as ``render`` converts one.

The docs are on the hub and nothing is fetched, so each doc is made from the config: the
fields its templates (``doc_to_text``, ``doc_to_choice``, ``doc_to_target``, Jinja) and its
Python functions (``process_docs`` and function templates, read as source, never imported by
us) read, typed by how they are read (an index or a loop: a list; an attribute or a string
key: a mapping; a method of text: text), then a field lm-eval still finds missing (its
KeyError, Jinja's "is undefined") added as text. The answer field takes, in turn, an index,
a letter, a digit and the first choice's text, and a doc counts as converted when one of them
gives a lettered item. A config whose doc cannot be made this way is counted apart from one
that mmconvert refuses, with the reason of each, by family.

    python bench/lm_eval_share.py [--limit N] [--only PREFIX]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import signal
import sys
import time
from collections import Counter, defaultdict
from typing import Any

from mmconvert.corpora.lmeval import LmEval, _EverySplit, loading_with, task_config, task_manager

LETTERS = ["A", "B", "C", "D"]
TEXT_METHODS = {"strip", "lstrip", "rstrip", "split", "lower", "upper", "replace", "startswith",
                "endswith", "format", "capitalize", "title", "splitlines", "encode", "count",
                "find", "isdigit", "casefold"}
LIST_FILTERS = {"join", "length", "first", "last", "list", "map", "select", "reject", "count",
                "batch", "sort", "reverse", "unique", "sum", "random", "max", "min"}
ANSWERS = [0, "A", "0", 1, "1", "a", None]  # None: the first choice's text


# --- the fields a config reads ---------------------------------------------------------------

class Shape:
    """What is known of one field: text (the default), a list, or a mapping of keys."""

    def __init__(self):
        self.kind = "text"
        self.keys: dict[str, Shape] = {}
        self.item: Shape | None = None
        self.digit = False
        self.known: str | None = None  # a key of a mapping the code looks the field up in
        self.written = False  # a list written out as text (read back by literal_eval, json)
        self.answer = False  # read by doc_to_target: takes each answer form in turn

    def at(self, key: Any) -> Shape:
        if isinstance(key, int):
            self.kind = "list" if self.kind != "map" else self.kind
            self.item = self.item or Shape()
            return self.item
        self.kind = "map"
        return self.keys.setdefault(key, Shape())

    def value(self, name: str, answer: Any) -> Any:
        if self.kind == "map":
            return {k: v.value(k, answer) for k, v in self.keys.items()}
        if self.kind == "list":
            if name.lower() in ("label", "labels", "keys", "letters"):
                return list(LETTERS)
            inner = self.item if self.item is not None else Shape()
            return [inner.value(f"{name} {n + 1}", answer) if inner.kind != "text"
                    else f"{name} {n + 1} text" for n in range(4)]
        if self.answer or name.lower() in ANSWER_NAMES:
            return answer
        if self.known is not None:
            return self.known
        if self.written:
            return repr([f"{name} {n + 1} text" for n in range(4)]).replace("'", '"')
        return "0" if self.digit else f"the {name} text"


# what mmconvert's own refusals say (lm-eval's errors say none of it)
REFUSALS = ("mmconvert", "letters one answer", "prompt is empty", "options; at most")
ANSWER_NAMES = {"answer", "answerkey", "label", "gold", "target", "correct", "answer_idx",
                "answer_index", "correct_answer", "answer_key", "golds", "labels_idx",
                "correct_option", "output", "answer_id", "ans", "key", "truth", "right_answer"}


def template_fields(text: str, shapes: dict[str, Shape], whole_list: bool = False) -> None:
    """The fields a Jinja template reads, into ``shapes``; ``whole_list``: the template's
    one expression is a list (a ``doc_to_choice``)."""
    import jinja2
    from jinja2 import nodes

    try:
        tree = jinja2.Environment().parse(text)
    except jinja2.TemplateSyntaxError:
        return
    local = {n.name for n in tree.find_all(nodes.Assign) for n in n.target.find_all(nodes.Name)}
    local |= {n.name for f in tree.find_all(nodes.For) for n in f.target.find_all(nodes.Name)}

    def shape_of(node) -> Shape | None:
        if isinstance(node, nodes.Name):
            if node.name in local or node.name in ("loop", "range", "zip", "enumerate"):
                return None
            return shapes.setdefault(node.name, Shape())
        if isinstance(node, nodes.Getattr):
            inner = shape_of(node.node)
            return None if inner is None else inner.at(node.attr)
        if isinstance(node, nodes.Getitem):
            inner = shape_of(node.node)
            if inner is None:
                return None
            key = node.arg.value if isinstance(node.arg, nodes.Const) else 0
            return inner.at(key if isinstance(key, (int, str)) else 0)
        return None

    for node in tree.find_all((nodes.Name, nodes.Getattr, nodes.Getitem)):
        shape_of(node)
    for call in tree.find_all(nodes.Call):  # a.index(b): a is a list
        if isinstance(call.node, nodes.Getattr) and call.node.attr == "index":
            owner = shape_of(call.node.node)
            if owner is not None:
                owner.kind = "list"
                owner.item = owner.item or Shape()
    for node in tree.find_all(nodes.Getattr):  # a method name is not a key
        holder = shape_of(node.node)
        if holder is not None and node.attr in TEXT_METHODS | {"index", "items", "keys",
                                                               "values", "get"}:
            holder.keys.pop(node.attr, None)
            if not holder.keys and holder.kind == "map":
                holder.kind = "list" if node.attr == "index" else "text"
                if holder.kind == "list":
                    holder.item = holder.item or Shape()
    for node in tree.find_all(nodes.Filter):
        target = shape_of(node.node)
        if target is not None and node.name in LIST_FILTERS and target.kind == "text":
            target.kind = "list"
        if target is not None and node.name in ("int", "float"):
            target.digit = True
    for node in tree.find_all(nodes.For):
        target = shape_of(node.iter)
        if target is not None and target.kind == "text":
            target.kind = "list"
    if whole_list:
        outputs = [n for o in tree.find_all(nodes.Output) for n in o.nodes
                   if not isinstance(n, nodes.TemplateData)]
        if len(outputs) == 1:
            target = shape_of(outputs[0])
            if target is not None and target.kind == "text":
                target.kind = "list"


def function_fields(function, shapes: dict[str, Shape]) -> None:
    """The fields a Python function of a config (as lm-eval resolves it: importing the task's
    utils, as it does to build the task) reads by ``doc["key"]`` or ``doc.get("key")``, with
    the functions of its module it calls; the keywords a ``partial`` binds are the values the
    function compares fields with (``x["subject"] == subject``)."""
    import functools
    import inspect

    bound: dict[str, Any] = {}
    while isinstance(function, functools.partial):
        bound.update(function.keywords)
        function = function.func
    try:
        tree = ast.parse(inspect.getsource(inspect.getmodule(function)))
    except (OSError, TypeError, SyntaxError):
        return
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    first = getattr(function, "__name__", "")
    todo, seen = [first], set()
    while todo:
        current = todo.pop()
        if current in seen or current not in functions:
            continue
        seen.add(current)
        body = functions[current]
        compared(body, shapes, bound)
        if current == first and bound:  # a partial's filter: the fields it reads take the
            value = next((v for v in bound.values() if isinstance(v, str)), None)  # value
            for node in ast.walk(body):                                   # it binds
                if (value is not None and isinstance(node, ast.Subscript)
                        and isinstance(node.slice, ast.Constant)
                        and isinstance(node.slice.value, str)):
                    shape = shapes.setdefault(node.slice.value, Shape())
                    shape.known = shape.known or value
        for node in ast.walk(body):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                todo.append(node.func.id)
            if isinstance(node, ast.Call):  # dataset.map(_process_doc): its argument too
                todo.extend(a.id for a in node.args if isinstance(a, ast.Name))
        _python_shapes(body, shapes, tables(tree))


def compared(body, shapes: dict[str, Shape], bound: dict[str, Any]) -> None:
    """A field a function compares with a constant, or with a keyword a partial binds
    (``dataset.filter(lambda x: x["subject"] == subject)``), takes that value: a doc of
    another value would be filtered out."""
    for node in ast.walk(body):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Subscript)
                and isinstance(node.left.slice, ast.Constant)
                and isinstance(node.left.slice.value, str)
                and isinstance(node.ops[0], (ast.Eq, ast.In))):
            continue
        other = node.comparators[0]
        value = (other.value if isinstance(other, ast.Constant)
                 else bound.get(other.id) if isinstance(other, ast.Name) else None)
        if isinstance(other, (ast.List, ast.Tuple, ast.Set)) and other.elts \
                and isinstance(other.elts[0], ast.Constant):
            value = other.elts[0].value
        if isinstance(value, str):
            shapes.setdefault(node.left.slice.value, Shape()).known = value


def tables(tree) -> dict[str, str]:
    """The module's mappings written out (``NAMES = {"a": ...}``): each name's first key."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) \
                and node.value.keys and isinstance(node.value.keys[0], ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.keys[0].value
    return found


def _python_shapes(body, shapes: dict[str, Shape], known: dict[str, str]) -> None:
    def shape_of(node) -> Shape | None:
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            return shape_of(node.value)  # text is sliced too: it says nothing of the kind
        if isinstance(node, ast.Subscript):
            key = node.slice.value if isinstance(node.slice, ast.Constant) else 0
            if isinstance(node.value, ast.Name):
                return shapes.setdefault(key, Shape()) if isinstance(key, str) else None
            inner = shape_of(node.value)
            return None if inner is None else inner.at(key if isinstance(key, (int, str))
                                                       else 0)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and isinstance(node.func.value, ast.Name)
                and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            return shapes.setdefault(node.args[0].value, Shape())
        return None

    for node in ast.walk(body):
        if isinstance(node, ast.Subscript):
            shape_of(node)
            if isinstance(node.value, ast.Name) and node.value.id in known:
                looked = shape_of(node.slice)  # TABLE[doc["key"]]: a key of TABLE
                if looked is not None:
                    looked.known = known[node.value.id]
        if isinstance(node, (ast.For, ast.comprehension)):
            target = shape_of(node.iter)
            if target is not None and target.kind == "text":
                target.kind = "list"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            target = shape_of(node.args[0])
            if target is not None and node.func.id in ("len", "enumerate", "list", "zip",
                                                       "sorted") and target.kind == "text":
                target.kind = "list"
            if target is not None and node.func.id in ("int", "float"):
                target.digit = True
        if isinstance(node, ast.Call) and node.args:
            called = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            if called in ("literal_eval", "loads", "eval"):
                target = shape_of(node.args[0])
                if target is not None:
                    target.written = True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "join" and node.args):
            target = shape_of(node.args[0])
            if target is not None and target.kind == "text":
                target.kind = "list"


def resolved(name: str) -> dict[str, Any]:
    """Task ``name``'s config with its functions, as lm-eval reads it to build the task."""
    from lm_eval.tasks._yaml_loader import load_yaml

    entry = task_manager().task_index[name]
    try:
        return load_yaml(entry.yaml_path, resolve_func=True)
    except Exception:  # noqa: BLE001 - the build says what is wrong
        return {}


def fields(config: dict[str, Any], functions: dict[str, Any]) -> dict[str, Shape]:
    shapes: dict[str, Shape] = {}
    for key in ("process_docs", "doc_to_text", "doc_to_choice", "doc_to_target"):
        value = config.get(key)
        if key == "doc_to_target":
            before = set(shapes)
        if callable(functions.get(key)):
            function_fields(functions[key], shapes)
            continue
        if not isinstance(value, str):
            continue
        if "{{" in value or "{%" in value:
            template_fields(value, shapes, whole_list=key == "doc_to_choice")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):  # a field's name
            shape = shapes.setdefault(value, Shape())
            if key == "doc_to_choice":
                shape.kind = "list"
            if key == "doc_to_target":
                shape.answer = True
        if key == "doc_to_target" and isinstance(value, str) and "{{" in value:
            for name in set(shapes) - before:  # the fields only the target reads
                if shapes[name].kind == "text":
                    shapes[name].answer = True
    return shapes


# --- building and converting -----------------------------------------------------------------

def build(name: str, doc: dict[str, Any]):
    """Task ``name`` built by lm-eval on a dataset of ``doc``. Metrics outside lm-eval's own
    registry (HF evaluate's, which it would fetch from the hub) are not loaded: no doc goes
    through them."""
    import datasets
    import lm_eval.api.task as tasks
    from lm_eval.api.registry import metric_registry

    rows = datasets.Dataset.from_list([doc])
    real = tasks.get_metric
    tasks.get_metric = lambda metric, *args, **kwargs: metric_registry.get(metric)
    try:
        with loading_with(lambda *args, real, **kwargs: _EverySplit(rows)), \
                contextlib.redirect_stderr(io.StringIO()), \
                contextlib.redirect_stdout(io.StringIO()):
            loaded = task_manager().load([name])
    finally:
        tasks.get_metric = real
    return loaded["tasks"][name]


def missing(err: Exception) -> str | None:
    """The field a build or a conversion found missing, from lm-eval's or Jinja's error."""
    if isinstance(err, KeyError) and err.args and isinstance(err.args[0], str):
        return err.args[0]
    found = re.search(r"'([A-Za-z_][\w]*)' is undefined", str(err))
    return found.group(1) if found else None


def convert(name: str, config: dict[str, Any]) -> tuple[str, str]:
    """('converted' | 'refused' | 'no doc', reason)."""
    shapes = fields(config, resolved(name))
    first = None
    for answer in ANSWERS:
        added: set[str] = set()
        for _ in range(8):
            doc = {key: shape.value(key, answer) for key, shape in shapes.items()}
            if answer is None:  # the first choice's text: the config's, or the doc's
                given = config.get("doc_to_choice")
                lists = ([given] if isinstance(given, list) and given else []) + \
                    [v for v in doc.values() if isinstance(v, list) and v]
                for key, shape in shapes.items():
                    if shape.answer or key.lower() in ANSWER_NAMES:
                        doc[key] = str(lists[0][0]) if lists else "the answer"
            values = {str(v) for v in doc.values() if not isinstance(v, (list, dict))}
            try:
                task = build(name, doc)
                docs = (task.test_docs() if task.has_test_docs() else
                        task.validation_docs() if task.has_validation_docs()
                        else task.training_docs())
                made = LmEval(name).item(task, docs[0], 0, "probe", "probe",
                                         {"task": name, "output_type": "multiple_choice",
                                          "split": "test"}, "en")
            except Exception as err:  # noqa: BLE001 - every reason is counted
                field = missing(err)
                if field and field not in added and field not in shapes \
                        and field not in values:  # a key looked up, not a field
                    added.add(field)
                    shapes[field] = Shape()
                    continue
                text = str(err).splitlines()[0] if str(err) else ""
                # a doc made, and refused by us (too many options only when the config
                # lists them: a count of our doc's making says nothing)
                if any(word in text for word in REFUSALS) and not (
                        "options; at most" in text
                        and not isinstance(config.get("doc_to_choice"), list)):
                    return "refused", f"{type(err).__name__}: {text}"
                text = text[:90]
                first = first or f"{type(err).__name__}: {text}"
                break
            if made.options and made.answer:
                return "converted", ""
            first = first or "no options or no answer"
            break
    return "no doc", first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=int, default=30, help="seconds a task may take")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    import os

    # nothing is fetched: a task that would reach the hub (a tokenizer, a metric) fails at once
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    import logging

    import datasets

    def cut_off(signum, frame):
        raise TimeoutError

    signal.signal(signal.SIGALRM, cut_off)

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    logging.disable(logging.WARNING)
    start = time.perf_counter()
    names = []
    for name in task_manager().all_subtasks:
        config = task_config(name)
        if config and config.get("output_type") == "multiple_choice" \
                and name.startswith(args.only):
            names.append((name, config))
    if args.limit:
        names = names[:args.limit]
    slow: list[tuple[float, str]] = []
    outcomes: Counter = Counter()
    reasons: dict[str, Counter] = defaultdict(Counter)
    families: dict[str, Counter] = defaultdict(Counter)
    for name, config in names:
        began = time.perf_counter()
        signal.alarm(args.timeout)  # a task that waits (on the network, say) is cut off
        try:
            outcome, reason = convert(name, config)
        except TimeoutError:
            outcome, reason = "no doc", f"took over {args.timeout} s"
        finally:
            signal.alarm(0)
        if args.verbose:
            print(f"{name}: {outcome} {reason}", file=sys.stderr, flush=True)
        slow.append((time.perf_counter() - began, name))
        outcomes[outcome] += 1
        if outcome != "converted":
            reason = re.sub(r"lm-eval task \S+ doc \d+", "lm-eval task … doc 0", reason)
            reasons[outcome][re.sub(r"'[^']*'", "'…'", reason)] += 1
            families[outcome][name.split("_")[0]] += 1
    total = len(names)
    print(f"lm-eval multiple-choice task configs built and converted: {total} in "
          f"{time.perf_counter() - start:.0f} s")
    for outcome in ("converted", "refused", "no doc"):
        count = outcomes[outcome]
        print(f"  {outcome:<10} {count:>6}  {100 * count / max(1, total):5.1f} %")
    slowest = sorted(slow, reverse=True)[:3]
    print("slowest: " + ", ".join(f"{n} {t:.1f} s" for t, n in slowest))
    for outcome in ("refused", "no doc"):
        if outcomes[outcome]:
            print(f"{outcome}, by family: " + ", ".join(
                f"{f} {n}" for f, n in families[outcome].most_common(12)))
            for reason, n in reasons[outcome].most_common(8):
                print(f"    {n:>5}  {reason}")


if __name__ == "__main__":
    main()
