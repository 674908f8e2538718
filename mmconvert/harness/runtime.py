"""What a written harness task calls inside lm-eval: for each doc, the item mmconvert makes of
it (as ``render lm-eval:TASK`` does, the same id, so the same pages), its prompts, its pages
drawn with the recipe, its target, and the letter read from a reply. It also refuses, in one
line, a backend that would not send the pages: a text-only one, or one whose ``max_images`` is
below a doc's page count (lm-eval would drop the rest without a word).
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
import threading
from pathlib import Path
from typing import Any

from ..items import safe_name
from ..tokens import load_tokenizer
from ..vision_tokens import image_tokens, rules_for
from . import MULTIMODAL_BACKENDS, PREFIX, untested


def refuse(message: str) -> None:
    """End the harness's process with one line (lm-eval would show a traceback)."""
    raise SystemExit(f"mmconvert harness: {message}")


def argv_value(flag: str) -> str | None:
    args = sys.argv[1:]
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def check_backend(folder: Path | None = None) -> None:
    """Run by the written module when the harness imports it: an image task asked of a
    backend, named on lm-eval's command line, that sends no images is refused before any
    request; a ``--num_fewshot`` the written tasks do not take is said (``fewshot_notice``)."""
    program = Path(sys.argv[0]).parent.name if sys.argv[0].endswith("__main__.py") \
        else Path(sys.argv[0]).name
    model, tasks = argv_value("--model"), argv_value("--tasks")
    if folder is not None and tasks is not None:
        fewshot_notice(folder, tasks)
    if program not in ("lm_eval", "lm-eval") or model is None or tasks is None:
        return
    images = [t for t in tasks.split(",") if t.startswith(PREFIX) and not t.endswith("_text")
              and t != f"{PREFIX}text"]
    if images and model not in MULTIMODAL_BACKENDS:
        refuse(f"--model {model} sends no images; {images[0]} needs one of "
               f"{', '.join(MULTIMODAL_BACKENDS)} (its _text twin takes any)")


_SAID: set[str] = set()


def fewshot_notice(folder: Path, tasks: str) -> None:
    """``--num_fewshot N`` asked of written tasks that do not take it is one line on stderr
    for each (the harness would ignore it with a log line at INFO): lm-eval's
    multiple-choice tasks, asked with no examples (an example's answer is the letter of an
    option only its page shows), and every lmms-eval task, whose prompt holds the original
    task's own count of examples."""
    given = argv_value("--num_fewshot")
    if given is None or not given.strip().isdigit() or int(given) == 0:
        return
    try:
        record = json.loads((Path(folder) / "harness.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    lmms = record.get("harness") == "lmms-eval"
    asked = set(tasks.split(","))
    for task, entry in (record.get("tasks") or {}).items():
        names = [n for n in (entry.get("image"), entry.get("text")) if n in asked]
        if not names or names[0] in _SAID:
            continue
        if entry.get("output_type") == "multiple_choice":
            why = ("a multiple-choice task is asked with no few-shot examples (an example's "
                   "answer would be the letter of an option only its page shows)")
        elif lmms:
            why = (f"its prompt holds {task}'s own few-shot examples "
                   f"({entry.get('num_fewshot') or 0}), as lm-eval writes them")
        else:
            continue
        _SAID.add(names[0])  # lmms-eval imports the module once per function
        print(f"mmconvert harness: --num_fewshot {given} is not used for {names[0]}: {why}",
              file=sys.stderr)


def check_version() -> None:
    """Run by an lmms-eval task's module: an lmms-eval other than the tested one is said in one
    line on stderr (the run goes on)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found: str | None = version("lmms-eval")
    except PackageNotFoundError:
        found = None
    line = untested("lmms-eval", found)
    if line:
        print(line, file=sys.stderr)


def one_kind_a_batch() -> None:
    """lm-eval's API models (``local-chat-completions`` and the others on its
    ``TemplateAPI``) read a batch's first request to tell whether the batch carries images,
    and unpack every request by it: a call running an image task and its ``_text`` twin
    together stopped with "not enough values to unpack (expected 3, got 2)". Such a batch is
    sent here as two, the requests with images and those without, each in its own order; the
    answers come back in the batch's order, so each twin is asked as it is alone. Done once a
    process, to lm-eval's ``TemplateAPI`` only (an lm-eval without it is left as it is)."""
    try:
        from lm_eval.models.api_models import TemplateAPI
    except ImportError:
        return
    original = TemplateAPI.generate_until
    if getattr(original, "one_kind_a_batch", False):
        return

    @functools.wraps(original)
    def generate_until(self, requests, disable_tqdm: bool = False):
        images = [len(request.args) > 2 for request in requests]
        if all(images) or not any(images):
            return original(self, requests, disable_tqdm=disable_tqdm)
        out: list[Any] = [None] * len(requests)
        for kind in (True, False):
            places = [i for i, has in enumerate(images) if has is kind]
            answers = original(self, [requests[i] for i in places], disable_tqdm=disable_tqdm)
            for place, answer in zip(places, answers, strict=True):
                out[place] = answer
        return out

    generate_until.one_kind_a_batch = True  # type: ignore[attr-defined]
    TemplateAPI.generate_until = generate_until


def running_model() -> Any:
    """lm-eval's model object, found on the stack of the evaluation that asks for a doc's
    images (None when there is none: a doc drawn outside an evaluation)."""
    frame = inspect.currentframe()
    while frame is not None:
        lm = frame.f_locals.get("lm")
        if lm is not None and hasattr(lm, "generate_until"):
            return lm
        frame = frame.f_back
    return None


def running_task(*names: str) -> Any:
    """lm-eval's own task object for one of ``names`` (the written image task or its twin),
    found on the stack of the lm-eval run that calls into the harness, with its dataset
    loaded; None outside lm-eval. (lmms-eval's task objects are not taken: they hold their
    docs already through ``process_docs``, which the original task would apply again.)"""
    frame = inspect.currentframe()
    while frame is not None:
        task = frame.f_locals.get("self")
        config = getattr(task, "config", None)
        if getattr(config, "task", None) in names \
                and type(task).__module__.startswith("lm_eval.") \
                and getattr(task, "dataset", None) is not None:
            return task
        frame = frame.f_back
    return None


def shared_original(task: str, dataset: Any, path: str | None = None) -> Any:
    """lm-eval's task ``task`` built from its YAML as lm-eval's task factory builds it (the
    YAML with its includes and functions, the structural keys dropped, its source named in
    the metadata), holding ``dataset`` instead of loading it."""
    import copy

    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    from ..corpora.lmeval import task_index

    if path is None:  # a folder written before harness.json named the YAML
        path = str(task_index()[task][1])
    config = copy.deepcopy(load_yaml(Path(str(path)), resolve_func=True))
    for key in ("tag", "group", "task_list"):
        config.pop(key, None)
    metadata = config.get("metadata", {})
    config["metadata"] = {**(metadata if isinstance(metadata, dict) else
                             {"_metadata": metadata}), "config_source": str(path)}

    class Shared(ConfigurableTask):
        def download(self, dataset_kwargs=None, **kwargs) -> None:
            self.dataset = dataset

    return Shared(config=config)


# the Harness of each (folder, task) in this process: lmms-eval imports a task's module once
# for each function its YAML names, and each copy would build the task again
_HARNESSES: dict[tuple[str, str], Harness] = {}
_HARNESSES_LOCK = threading.Lock()


def harness(folder: Path, task: str) -> Harness:
    """The one ``Harness`` of ``task`` in ``folder`` for this process."""
    key = (str(Path(folder).resolve()), task)
    with _HARNESSES_LOCK:
        found = _HARNESSES.get(key)
        if found is None:
            found = _HARNESSES[key] = Harness(folder, task)
        return found


class Harness:
    """One written task's functions: the task's own lm-eval task object (built once, from the
    same data), mmconvert's item of each doc, and the recipe's drawer."""

    def __init__(self, folder: Path, task: str):
        self.folder, self.task = Path(folder), task
        self._lock = threading.Lock()
        self._drawn: dict[str, Any] = {}
        # lm-eval's few-shot sampler after the contexts of the first N eval docs: (N, state)
        self._sampler_at: tuple[int, Any] | None = None

    @functools.cached_property
    def record(self) -> dict[str, Any]:
        return json.loads((self.folder / "harness.json").read_text(encoding="utf-8"))

    @functools.cached_property
    def original(self):
        """The task as lm-eval builds it from its own YAML (its functions and templates),
        over the harness's data. Inside lm-eval, over the dataset lm-eval loaded for the
        written task (``shared_original``): nothing is indexed or loaded a second time.
        Elsewhere (lmms-eval, or a doc drawn outside a run), through a TaskManager over the
        task's folder."""
        running = running_task(f"{PREFIX}{self.task}", f"{PREFIX}{self.task}_text")
        if running is not None:
            path = (self.record["tasks"].get(self.task) or {}).get("yaml")
            return shared_original(self.task, running.dataset, path)
        from ..corpora.lmeval import dataset_source, manager_for

        source = (self.record["tasks"].get(self.task) or {}).get("source")
        with dataset_source(Path(source) if source else None):
            loaded = manager_for([self.task]).load([self.task])
        return loaded["tasks"][self.task]

    @functools.cached_property
    def corpus(self):
        from ..corpora.lmeval import LmEval

        return LmEval(self.task)

    @functools.cached_property
    def drawer(self):
        from ..recipes import Drawer, load_recipe

        values: dict[str, Any] = {}
        if self.record.get("prompt_style"):
            values["prompt_style"] = self.record["prompt_style"]
        return Drawer(load_recipe(self.folder / "recipe.yaml"), **values)

    def drawn(self, item):
        """The item drawn (once: its prompt, pages and tokens are all asked for)."""
        with self._lock:
            found = self._drawn.get(item.id)
        if found is None:
            found = self.drawer.draw(item, corpus=self.corpus)
            with self._lock:
                if len(self._drawn) > 256:
                    self._drawn.clear()
                self._drawn[item.id] = found
        return found

    @functools.cached_property
    def eval_docs(self) -> list[dict[str, Any]]:
        """The eval docs, in order (the split ``render lm-eval:TASK`` reads)."""
        task = self.original
        return list(task.test_docs() if task.has_test_docs() else task.validation_docs())

    @functools.cached_property
    def docs(self) -> dict[str, int]:
        """Each eval doc's index, by its content."""
        index: dict[str, int] = {}
        for number, doc in enumerate(self.eval_docs):
            index.setdefault(doc_key(doc), number)
        return index

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one object per task, for the process
    def _item(self, key: str):
        doc = json.loads(key)
        number = self.docs.get(key)
        if number is None:
            refuse(f"{self.task}: a doc that is not among the task's eval docs")
        task = self.original
        config = task.config
        import lm_eval

        split = config.test_split if task.has_test_docs() else config.validation_split
        source = {"task": self.task, "version": task.VERSION, "group": None,
                  "output_type": config.output_type, "split": split,
                  "dataset": config.dataset_path, "config": config.dataset_name,
                  "harness": getattr(lm_eval, "__version__", None)}
        subset = safe_name(self.task)
        return self.corpus.item(task, doc, number, f"{subset}-{number:04d}", subset, source,
                                "en")

    def item(self, doc: dict[str, Any]):
        with self._lock:
            return self._item(doc_key(doc))

    # -- what the YAML names -------------------------------------------------------------

    def process_docs(self, dataset):
        return self.original.config.process_docs(dataset)

    def fewshot_prompt(self, doc: dict[str, Any]) -> str:
        return self.original.doc_to_text(doc)

    def _prompts(self, doc: dict[str, Any], fewshot: bool = False) -> tuple[str, str]:
        """The image prompt and the text prompt of ``doc``; with ``fewshot``, a generation
        task's prompt holds its description and few-shot examples as lm-eval's
        ``fewshot_context`` writes them for that doc in a run of the whole split
        (``fewshot_context``)."""
        from ..corpora.lmeval import IN_THE_IMAGE

        item = self.item(doc)
        task = self.original
        if task.config.output_type == "generate_until":
            if fewshot:
                text = self.fewshot_context(doc)
            else:
                text = task.doc_to_text(doc)
            drawn = item.context or (item.question or "").strip()
            at = text.rfind(drawn) if drawn else -1
            image = text[:at] + IN_THE_IMAGE + text[at + len(drawn):] if at >= 0 else text
            return image, text
        drawn = self.drawn(item)
        return drawn.row.prompt, drawn.row.text_prompt

    def fewshot_context(self, doc: dict[str, Any]) -> str:
        """``doc``'s prompt with the few-shot examples lm-eval gives it: lm-eval seeds its
        sampler once (``--fewshot_random_seed``, 1234) and draws each doc's examples in the
        split's order, so the N-th doc's are the N-th draw. Setting the seed before every doc
        gave every doc the first doc's examples (7 of 8 gsm8k prompts differed from
        lm-eval's). The sampler is replayed to the doc's place (the contexts of the docs
        before it, as lm-eval makes them) from where the last call left it, so docs asked in
        order cost one context each, and any order gives the same prompts."""
        from ..corpora.lmeval import LM_EVAL_FEWSHOT_SEED

        task = self.original
        shots = int(task.config.num_fewshot or 0)
        number = self.item(doc).metadata["lm_eval"]["doc"]  # refuses a doc of no eval split
        with self._lock:
            at = self._sampler_at
            if at is None or at[0] > number:
                task.set_fewshot_seed(LM_EVAL_FEWSHOT_SEED)
                done = 0
            else:
                task.sampler.rnd.setstate(at[1])
                done = at[0]
            for earlier in self.eval_docs[done:number]:
                task.fewshot_context(earlier, shots)
            text = task.fewshot_context(doc, shots)
            self._sampler_at = (number + 1, task.sampler.rnd.getstate())
        return text

    def image_prompt(self, doc: dict[str, Any]) -> str:
        return self._prompts(doc)[0]

    def text_prompt(self, doc: dict[str, Any]) -> str:
        return self._prompts(doc)[1]

    def lmms_image_prompt(self, doc: dict[str, Any], kwargs: Any = None) -> str:
        return self._prompts(doc, fewshot=True)[0]

    def lmms_text_prompt(self, doc: dict[str, Any], kwargs: Any = None) -> str:
        return self._prompts(doc, fewshot=True)[1]

    def target(self, doc: dict[str, Any]):
        """The task's own target (a few-shot example's too); a multiple-choice doc's letter."""
        if self.original.config.output_type == "generate_until":
            return self.original.doc_to_target(doc)
        return self.item(doc).answer

    def images(self, doc: dict[str, Any]) -> list:
        item = self.item(doc)
        drawn = self.drawn(item)
        pages = drawn.images()
        lm = running_model()
        if lm is not None:
            limit = getattr(lm, "max_images", None)
            if limit is not None and int(limit) < len(pages):
                refuse(f"{self.task} doc {self.docs[doc_key(doc)]} has {len(pages)} pages and "
                       f"the backend's max_images is {limit}: give max_images={len(pages)} "
                       "or more in --model_args (lm-eval would send the first only)")
            if type(lm).__name__ == "LocalCompletionsAPI":
                refuse("local-completions sends no images; use local-chat-completions")
        self.tokens(doc, item, drawn)
        return pages

    def letter(self, resps: list[list[str]], docs: list[dict[str, Any]]) -> list[list[str]]:
        """lm-eval's ``custom`` filter: each reply's option letter, read as ``mmconvert eval``
        reads it (``scoring.answers.extract_choice``); "" when it names none."""
        from ..scoring.answers import extract_choice

        out = []
        for replies, doc in zip(resps, docs, strict=True):
            options = list(self.item(doc).options)
            out.append([extract_choice(reply or "", len(options), options)[0] or ""
                        for reply in replies])
        return out

    # -- tokens beside lm-eval's logs -----------------------------------------------------

    @functools.cached_property
    def counters(self):
        spec = self.record.get("tokenizer")
        return rules_for(self.record.get("models")), load_tokenizer(spec) if spec else None

    def tokens(self, doc: dict[str, Any], item, drawn) -> None:
        rules, tokenizer = self.counters
        sizes = [{"width": e.width, "height": e.height}
                 for e in drawn.row.images_in(self.drawer.job.renderer.profile.shown)]
        record = {"task": self.task, "doc_id": self.docs[doc_key(doc)], "item": item.id,
                  "pages": len(sizes), "sizes": [[s["width"], s["height"]] for s in sizes],
                  "vision_tokens": {name: image_tokens(rule, sizes)
                                    for name, rule in rules.items()}}
        if tokenizer is not None:
            from ..recipes.fingerprints import shown_text

            record["text_tokens"] = tokenizer.count(shown_text(drawn.row))
        line = json.dumps(record, ensure_ascii=False) + "\n"
        places = [self.folder / "tokens" / f"{self.task}.jsonl"]
        output = argv_value("--output_path")
        if output:
            places.append(Path(output) / f"mmconvert_tokens_{self.task}.jsonl")
        with self._lock:
            for path in places:
                path.parent.mkdir(parents=True, exist_ok=True)
                # a run's first record replaces the file an earlier run left: it holds one
                # run's docs, each once
                mode = "a" if path in _STARTED else "w"
                _STARTED.add(path)
                with open(path, mode, encoding="utf-8") as handle:
                    handle.write(line)


# the token files this process (one harness run) has written to
_STARTED: set[Path] = set()


def doc_key(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str)
