"""``mmconvert eval``: every item of a run through an OpenAI-compatible endpoint as its image
prompt and as its text-only twin, on inspect_ai, scored by family and compared item by item.

inspect_ai carries the requests: its ``openai-api`` provider (any OpenAI-compatible server), its
concurrency (``max_connections``), retries with back-off (429, 5xx, time-outs), its response
cache (``DIR/cache``: an answered request is never sent again, so a killed evaluation re-runs
for free) and its logs (``DIR/logs``, which ``inspect view`` opens). Each condition is one
inspect task; the scorer is ``scoring``'s family rules. mmconvert reads the logs back into
``responses.jsonl`` and ``results.json``.
"""

from __future__ import annotations

import base64
import os
import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, field_validator

from ..api.prices import BudgetReached, PriceTable, estimate_tokens
from ..errors import MMConvertError, SourceError, UsageError, needs
from ..executors import local_executor
from ..locks import locked
from ..manifest import JsonlLog, write_json
from ..options import OPTIONS, cli
from ..renderers import renderer_class
from ..rows import ImageEntry, Row, asks_direct
from ..runfolder import LOCK, open_run, read_recorded
from ..scoring.spec import (
    Scored,
    free_form,
    missing,
    score_row,
    spec_of,
    unscorable,
)
from ..scoring.transcription import transcription_scores
from ..tokens import load_tokenizer
from ..vision_tokens import TOKEN_RULES, image_tokens, token_rule
from .budget import FIELD as BUDGET
from .budget import Cut, budgeted, check_budget_options, summary
from .decompose import blank_page, decomposition, drawn_nonce
from .endpoint import REDIRECTED, SERVICE, api_key, check_endpoint, inspect_model
from .judge import judge_prompt, read_judgement
from .readers import READABLE, check_reader, is_reader, reader_model
from .results import (
    CONDITIONS,
    Condition,
    Modality,
    Outcome,
    compression_of,
    grid_cell,
    grid_heat_maps,
    option_order,
    scoring_summary,
    summarise,
)
from .slots import Slots
from .transcribe import (
    PAGE_MARK,
    PAGES,
    TRANSCRIBE_PROMPT,
    read_by_page,
    transcribed_text,
    with_pages,
)


class EvalOptions(BaseModel):
    """What ``mmconvert eval`` asks and how; ``api_key_env`` names the variable the key is
    read from, the key itself is never stored."""

    model_config = OPTIONS

    model: str = Field(description="model name the endpoint serves (required, except for "
                                   "compare)")
    base_url: str = Field("https://api.openai.com/v1",
                          description="OpenAI-compatible endpoint (vLLM, SGLang and others: "
                                      "http://host:port/v1)",
                          pattern=r"^https?://[^/\s?#]+(/\S*)?$")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the "
                                                           "key; the key is never written")
    modality: list[Modality] = Field(
        default_factory=lambda: list[Modality](["image", "text"]), min_length=1,
        description="conditions, comma-separated: image, blank (the image prompt with each "
                    "page replaced by a blank page of its size and paper colour: what a "
                    "model scores without reading), text, text-budget (the text cut to "
                    "each item's vision tokens for the first --ratio-model; needs "
                    "--tokenizer), text-image (occlusions' text-only image)",
        json_schema_extra=cli(split=True))
    probe: Literal["transcribe"] | None = Field(
        None, description="transcribe: ask for each item's shown pages to be transcribed "
                          "exactly, and score the reply against the text they hold with "
                          "Fox's metrics (precision, recall, edit distance), in place of "
                          "--modality")
    budget_cut: Cut = Field(
        "head", description="what text-budget keeps of a context too long for the budget: "
                            "its head, its tail, or both ends around a cut middle")
    protocol: Literal["official", "strict"] = Field(
        "official", description="VCR scoring protocol (see score vcr)")
    limit: int | None = Field(None, ge=1, description="evaluate the first N items of the run")
    subsets: list[str] | None = Field(None, description="only this subset; repeatable",
                                      json_schema_extra=cli("--subset"))
    concurrency: int = Field(16, ge=1, le=1024, description="requests in flight")
    max_tokens: int | None = Field(None, ge=1, description="reply length",
                                   json_schema_extra=cli(default="1024 for cot prompts, 64 "
                                                                 "for direct"))
    timeout: int = Field(120, ge=1, description="seconds per request")
    max_retries: int = Field(6, ge=0, description="retries of a failed request: 429, 5xx, "
                                                  "time-outs, malformed answers")
    budget: float | None = Field(None, gt=0, description="USD the evaluation may spend at most "
                                                         "(models in the price table)")
    seed: int = Field(0, description="seed of the paired bootstrap and the requests")
    judge_model: str | None = Field(
        None, description="score free-form answers (no options, spans or paper's scorer) "
                          "with this model on the same endpoint and a 0-10 rubric; named in "
                          "results.json")
    tokenizer: str | None = Field(
        None, description="a tokenizer (a tokenizer.json, a folder holding one, a hub id in "
                          "the local cache, or tiktoken:NAME): results.json gains the items' "
                          "text tokens and compression ratio per model, as mmconvert stats "
                          "counts them")
    ratio_models: list[str] | None = Field(
        None, json_schema_extra=cli(flag="--ratio-model",
                                    default="the nine main rules mmconvert stats prints"),
        description="a model whose vision tokens (and ratio) results.json reports; "
                    "repeatable")

    @field_validator("ratio_models")
    @classmethod
    def _known(cls, names: list[str] | None) -> list[str] | None:
        for name in names or []:
            token_rule(name)  # an unknown model: one line with a did-you-mean
        return names


@dataclass
class Plan:
    """The items and requests of an evaluation, before any is sent."""

    rows: list[Row]
    conditions: list[Condition]
    requests: int
    vision_tokens: dict[str, int | None]  # None: the model refuses one of the images
    estimate_usd: float | None
    # items with no gold answer: not sent, not scored, and left out of n and the score
    unscored: list[dict[str, str]] = field(default_factory=list)
    images: int = 0  # images sent, over every request
    # the image tokens the model bills by its own rule (the price table's image_tiles or
    # image_patches), or None when the table has no rule for it: the estimate then leaves the
    # images out
    image_tokens: int | None = None


def select_rows(run: Path, options: EvalOptions) -> list[Row]:
    rows = open_run(run).rows()
    if options.subsets:
        unknown = [s for s in options.subsets if s not in {r.subset for r in rows}]
        if unknown:
            raise UsageError(f"--subset {unknown[0]}: no item of {run} is in it")
        rows = [r for r in rows if r.subset in options.subsets]
    if options.limit:
        rows = rows[:options.limit]
    if not rows:
        raise SourceError(f"{run}: no items to evaluate")
    if any(not r.text_prompt for r in rows):
        raise SourceError(f"{run}: its rows have no text_prompt, the text-only twin the "
                          "comparison needs; render the corpus again with this mmconvert "
                          "(every renderer writes one)")
    return rows


def conditions_for(rows: list[Row], wanted: list[Condition], run: Path
                   ) -> list[Condition]:
    twins = all(renderer_class(r["renderer"]["name"]).profile.twins for r in rows)
    if "text-image" in wanted and not twins:
        raise UsageError(f"--modality text-image: the rows of {run} have no text-only image "
                         "(only occlusions do)")
    return [c for c in CONDITIONS if c in wanted]


def images_of(row: Row, condition: Condition) -> list[ImageEntry]:
    renderer = renderer_class(row.renderer.name)
    roles = {"image": renderer.profile.shown, "blank": renderer.profile.shown,
             "transcribe": renderer.profile.shown,
             "text-image": renderer.profile.twins}.get(condition, ())
    return row.images_in(roles)


def prompt_of(row: Row, condition: Condition) -> str:
    if condition == "text-budget":
        return row.carried(BUDGET)["prompt"]
    if condition == "transcribe":
        return TRANSCRIBE_PROMPT
    return row.text_prompt if condition == "text" else row.prompt


def plan(run: Path, options: EvalOptions) -> Plan:
    """Requests, vision tokens under each stats rule, and the estimated cost (the shipped
    price table; None for a model it does not list)."""
    rows: list[Row] = []
    unscored = []
    for row in select_rows(run, options):
        why = unscorable(row) if options.probe is None else (
            None if transcribed_text(row).split() else "no text on its pages")
        if why is None:
            rows.append(row)
        else:
            unscored.append({"id": row.id, "reason": why})
    if not rows:
        raise SourceError(f"{run}: nothing to evaluate: none of its {len(unscored)} selected "
                          f"item(s) has a gold answer to score against (the first, "
                          f"{unscored[0]['id']}: {unscored[0]['reason']})")

    lacking = {missing(spec_of(row, options.protocol)) for row in rows} - {None} \
        if options.probe is None else set()
    if lacking:  # a metric whose package is not installed: said before any request
        raise UsageError(sorted(str(why) for why in lacking)[0])
    if options.probe == "transcribe":
        conditions: list[Condition] = ["transcribe"]
    else:
        conditions = conditions_for(rows, list(options.modality), run)
        if is_reader(options.model):
            check_readable(run, rows, conditions, options)
    if "text-budget" in conditions:  # each item's text cut to its pages' vision tokens
        model = check_budget_options(options.tokenizer, options.ratio_models)
        tokenizer = load_tokenizer(cast(str, options.tokenizer))
        rows = [budgeted(row, tokenizer, model, options.budget_cut) for row in rows]
    if options.probe == "transcribe":  # a page at a time where each page's text is recorded
        rows = [with_pages(run, row) for row in rows]
    # requests per item and condition
    asked = {row.id: len(row.carried(PAGES)) for row in rows if row.carried(PAGES)}
    prompt_tokens = sum(estimate_tokens(prompt_of(row, condition)) * asked.get(row.id, 1)
                        for row in rows for condition in conditions)
    # every image sent, over every request; a rule's total is None when that model's
    # processor refuses one of them (``stats.image_tokens``)
    images = [image for row in rows for condition in conditions
              for image in images_of(row, condition)]
    tokens = {name: image_tokens(rule, images) for name, rule in TOKEN_RULES.items()}
    table = PriceTable.load()
    estimate, billed = None, None
    if table.has(options.model):
        prices = table.models[options.model]["per_million_tokens"]
        outputs = sum(max_tokens(row, options) * asked.get(row.id, 1)
                      for row in rows) * len(conditions)
        rule = table.image_rule(options.model)
        if rule is not None:  # the model's own rule, never another model's
            billed = image_tokens(rule, images)
        estimate = ((prompt_tokens + (billed or 0)) * prices.get("input", 0.0)
                    + outputs * prices.get("output", 0.0)) / 1_000_000
    requests = sum(asked.get(row.id, 1) for row in rows) * len(conditions)
    return Plan(rows, conditions, requests, tokens, estimate, unscored,
                images=len(images), image_tokens=billed)


def check_readable(run: Path, rows: list[Row], conditions: list[Condition],
                   options: EvalOptions) -> None:
    """A reader (``ocr/...``) answers with what a page shows: it is asked only the image
    condition of items a transcription can be scored on (``readers.READABLE``). Its
    transcription of a multiple-choice page ("A. Mercury ...") would be read as choosing A."""
    others = [c for c in conditions if c not in ("image", "blank")]
    if others:
        raise UsageError(f"--model {options.model} reads pages: it has no answer for the "
                         f"{others[0]} condition (give --modality image or image,blank)")
    for row in rows:
        metric = spec_of(row, options.protocol).get("metric")
        if metric not in READABLE:
            raise UsageError(f"--model {options.model} reads pages and answers no question: "
                             f"{run} item {row.id} is scored by {metric}; a reader serves "
                             f"items scored by {' or '.join(READABLE)} (render niah)")


def max_tokens(row: Row, options: EvalOptions) -> int:
    if options.max_tokens:
        return options.max_tokens
    if options.probe == "transcribe":  # room for the whole text (a token is a character or more)
        return max(1024, len(transcribed_text(row)))
    return 64 if asks_direct(row) else 1024


# --- the inspect tasks ------------------------------------------------------------------------


def data_uri(data: bytes, path: str) -> str:
    kind = "jpeg" if path.lower().endswith((".jpg", ".jpeg")) else "png"
    return f"data:image/{kind};base64," + base64.b64encode(data).decode("ascii")


def build_tasks(run: Path, rows: list[Row], conditions: list[Condition],
                options: EvalOptions, slots: Slots | None = None):
    """One inspect task a condition; with ``slots``, each request first takes one of the
    evaluation's slots shared with its other processes."""
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import CachePolicy, ChatMessageUser, ContentImage, ContentText
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate, solver

    by_id = {row.id: row for row in rows}

    judge = inspect_model(options.judge_model, options.base_url) if options.judge_model \
        else None

    def slot():  # one of the evaluation's slots, when its processes share them
        return slots.taken() if slots is not None else nullcontext()

    @scorer(metrics=[mean()], name="mmconvert")
    def mmconvert_scorer():
        async def score(state, target):
            item, _, page = str(state.sample_id).partition(PAGE_MARK)
            row = by_id[item]
            response = state.output.completion or ""
            if state.metadata.get("condition") == "transcribe":
                truth = row.carried(PAGES)[int(page) - 1] if page else transcribed_text(row)
                read = transcription_scores(truth, response)
                return Score(value=read.precision or 0.0, answer=None,
                             metadata={"parsed": read.recall is not None, **read.as_dict()})
            if judge is not None and free_form(row):
                async with slot():
                    reply = await judge.generate(judge_prompt(row, response),
                                                 cache=CachePolicy(expiry=None))
                scored = read_judgement(reply.completion or "")
            else:
                scored = score_row(row, response, protocol=options.protocol)
            return Score(value=scored.value, answer=scored.answer,
                         metadata={"parsed": scored.parsed, **scored.extra})
        return score

    @solver(name="mmconvert_generate")
    def asked():  # inspect's generate, each request holding one of the shared slots
        async def solve(state, ask):
            async with slot():
                return await ask(state, cache=CachePolicy(expiry=None))
        return solve

    tasks = []
    for condition in conditions:
        samples = []
        for row in rows:
            content: list = []
            for image in images_of(row, condition):
                data = read_recorded(run, image, field="images",
                                     where=f"{run / 'manifest.jsonl'} item {row.id}")
                if condition == "blank":  # the page's size, nothing drawn on it
                    data = blank_page(data)
                content.append(ContentImage(image=data_uri(
                    data, "blank.png" if condition == "blank" else image["path"])))
            metadata = {"condition": condition, "subset": row.subset,
                        "max_tokens": max_tokens(row, options)}
            pages = row.carried(PAGES) if condition == "transcribe" else None
            if pages is not None:  # one request a page, its own text its truth
                samples += [Sample(id=f"{row.id}{PAGE_MARK}{number}",
                                   input=[ChatMessageUser(content=[
                                       image, ContentText(text=prompt_of(row, condition))])],
                                   metadata={**metadata, "page": number})
                            for number, image in enumerate(content, start=1)]
                continue
            content.append(ContentText(text=prompt_of(row, condition)))
            samples.append(Sample(id=row.id, input=[ChatMessageUser(content=content)],
                                  metadata=metadata))
        scorers = [mmconvert_scorer()]
        tasks.append(Task(name=f"{run.name}-{condition}".replace(" ", "_"),
                          dataset=MemoryDataset(samples),
                          solver=generate(cache=CachePolicy(expiry=None))
                          if slots is None else asked(),
                          scorer=scorers,
                          config=_generate_config(rows, options)))
    return tasks


def _generate_config(rows: list[Row], options: EvalOptions):
    from inspect_ai.model import GenerateConfig

    return GenerateConfig(temperature=0.0, max_tokens=max(max_tokens(r, options) for r in rows),
                          seed=options.seed)


# --- running and reading back -----------------------------------------------------------------


def evaluate(run: Path, out: Path, options: EvalOptions, *, display: str = "none",
             cache: Path | None = None) -> dict[str, Any]:
    """Run the evaluation into ``out`` (responses cached in ``cache``, default ``out/cache``);
    return results.json's content."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise UsageError(needs("mmconvert eval", "inspect_ai", "eval")) from None

    todo = plan(run, options)
    if options.budget is not None:
        if todo.estimate_usd is None:
            raise UsageError(f"--budget: the price table has no price for {options.model}, so "
                             "the spend cannot be bounded; leave --budget out for a local "
                             "model")
        if todo.images and todo.image_tokens is None:
            raise UsageError(f"--budget: the price table has no image rule (image_tiles or "
                             f"image_patches) for {options.model}, so the cost of its "
                             f"{todo.images} image(s) cannot be bounded; leave --budget out")
        if todo.estimate_usd > options.budget:
            raise BudgetReached(
                f"the evaluation may cost up to ${todo.estimate_usd:.2f} (every reply at its "
                f"max tokens), over --budget ${options.budget:.2f}; nothing was sent: lower "
                "--limit or raise --budget")
    if options.tokenizer:  # a tokenizer that cannot be read stops before any request
        load_tokenizer(options.tokenizer)
    key = answering_key(options)
    with locked(out / LOCK, out):  # one evaluation at a time into ``out``
        return _evaluate(run, out, options, todo, key, display, cache)


def answering_key(options: EvalOptions) -> str:
    """The key ``options.model`` is asked with, once it is known to answer here: a reader on
    this machine, installed (no endpoint, no key), or the endpoint taking the key and listing
    the model (one free request)."""
    if is_reader(options.model):
        check_reader(options.model)
        return "none"
    key = api_key(options)
    check_endpoint(options, key)
    return key


def _evaluate(run: Path, out: Path, options: EvalOptions, todo: Plan, key: str, display: str,
              cache: Path | None) -> dict[str, Any]:
    os.environ[f"{SERVICE}_BASE_URL"] = options.base_url
    os.environ[f"{SERVICE}_API_KEY"] = key  # this process only; never written anywhere
    os.environ["INSPECT_CACHE_DIR"] = str((cache or out / "cache").resolve())
    # one process per condition (the process executor): inspect's own bookkeeping is about
    # 10 ms of CPU a request in one event loop, so the conditions use a core each
    # (bench/eval_speed.py); they share the concurrency's slots (evaluation.slots)
    values = options.model_dump()
    count = len(todo.conditions)
    slots = None
    if count > 1:  # what each condition's process would import, imported once before they fork
        _preload()
        slots = Slots(options.concurrency)
    tasks = [(run, out, values, todo.rows, condition, display if count == 1 else "none")
             for condition in todo.conditions]
    parts = list(local_executor(count, count).map(partial(condition_worker, slots), tasks))
    found = {(o.id, o.condition): o for part in parts for o in part}
    refused = next((o.error for o in found.values() if o.error and REDIRECTED in o.error),
                   None)
    if refused:  # no reply of another server is scored
        raise MMConvertError(f"{options.base_url}: {refused[refused.index('the endpoint'):]}"
                             if "the endpoint" in refused else refused)
    outcomes = [found[(row.id, c)] for row in todo.rows for c in todo.conditions
                if (row.id, c) in found]
    if outcomes and all(o.scored is None for o in outcomes):
        raise MMConvertError(f"every request to {options.base_url} failed (the first: "
                             f"{outcomes[0].error}); see inspect view --log-dir {out / 'logs'}")
    answered = [o.as_row() for o in outcomes]
    JsonlLog(out / "responses.jsonl").rewrite(answered)
    results = summarise(outcomes, todo.conditions, options, run, todo.unscored)
    results["scoring"] = scoring_summary(todo.rows, outcomes, options)
    found_why = decomposition(results["model"], answered, drawn_nonce(todo.rows),
                              options.seed)
    if found_why is not None:  # two or more of blank, image, text, text-budget
        results["decomposition"] = found_why
    order = option_order(todo.rows, outcomes)
    if order is not None:  # a run rendered with --shuffle-options
        results["option_order"] = order
    if options.tokenizer or options.ratio_models:
        results["compression"] = compression_of(todo.rows, options, outcomes)
    if "text-budget" in todo.conditions:
        results["text_budget"] = summary(todo.rows, load_tokenizer(cast(str, options.tokenizer)),
                                         options.budget_cut)
    if "grid" in results:
        results["grid"]["flagged"] = [
            {"id": row.id, "reason": row.metadata["grid_flag"]} for row in todo.rows
            if row.metadata.get("grid_flag")]
        results["grid"]["heat_maps"] = [p.name for p in grid_heat_maps(results, out)] or \
            "none: matplotlib is missing (pip install 'mmconvert[stats]')"
    write_json(out / "results.json", results, indent=1)
    return results


def _preload() -> None:
    """Import, in this process, the modules inspect and its OpenAI provider import on an
    evaluation's first request, and read inspect's model database (its YAML, parsed in pure
    Python): about 2 s of CPU that each condition's process, forked from this one, would
    otherwise spend again."""
    import openai  # noqa: F401
    from inspect_ai.agent._acp import server  # noqa: F401
    from inspect_ai.model._providers import openai_compatible  # noqa: F401

    try:  # inspect's own cache of it, which the forked processes inherit
        from inspect_ai.model._model_info import _get_model_info_db

        _get_model_info_db()
    except (ImportError, OSError, ValueError):
        pass  # another inspect: each process reads it as it needs it


def condition_worker(slots: Slots | None):
    """The executor's worker: one task is ``run_condition``'s arguments. ``slots`` reaches the
    worker processes by inheritance (a semaphore cannot be sent to them)."""
    return lambda task: run_condition(*task, slots=slots)


def run_condition(run: Path, out: Path, values: dict[str, Any], rows: list[Row],
                  condition: Condition, display: str, *,
                  slots: Slots | None = None) -> list[Outcome]:
    """One condition of the selected ``rows`` as one inspect task (in this process), its
    requests taking the evaluation's ``slots`` when it has other conditions; its outcomes."""
    from inspect_ai import eval as inspect_eval

    options = EvalOptions.model_validate(values)
    concurrency = options.concurrency
    (task,) = build_tasks(run, rows, [condition], options, slots)
    # a model of its own for this endpoint (inspect memoizes models by name, and a second
    # evaluation in one process may talk to another server)
    model = reader_model(options.model) if is_reader(options.model) else \
        inspect_model(options.model, options.base_url)
    logs = inspect_eval([task], model=model, log_dir=str(out / "logs"),
                        display=cast(Any, display),
                        max_connections=concurrency, max_samples=concurrency,
                        # every attempt is bounded, a stalled or trickling body too
                        # (inspect cancels it): ``timeout`` alone bounds only the retries
                        max_retries=options.max_retries, attempt_timeout=options.timeout,
                        fail_on_error=False, log_images=False, score_display=False,
                        # the per-sample bookkeeping a live viewer needs costs about 40 % of
                        # inspect's own time per request (bench/eval_speed.py); the logs are
                        # written in full at the end of the task all the same
                        log_realtime=False, log_buffer=1000, log_model_api=False,
                        # no control server: it would open a socket for ``inspect ctl``,
                        # which nothing here uses (and import a web framework to serve it)
                        ctl_server=False)
    return read_logs(logs, rows, options.timeout)


def read_logs(logs, rows: list[Row], timeout: int | None = None) -> list[Outcome]:
    """One outcome per item and condition, in manifest order."""
    pages = {row.id: len(images_of(row, "image")) for row in rows}
    subsets = {row.id: row.subset for row in rows}
    cells = {row.id: grid_cell(row) for row in rows}
    found: dict[tuple[str, str], Outcome] = {}
    by_page: dict[str, dict[int, Outcome]] = {}  # --probe transcribe, a page at a time
    for log in logs:
        if log.status == "error" and not log.samples:
            message = (log.error.message if log.error else "the evaluation failed")
            raise MMConvertError(squeezed(message))
        for sample in log.samples or []:
            condition = sample.metadata.get("condition")
            error = (request_error(sample.error.message, timeout, sample.error.traceback)
                     if sample.error else None)
            score = (sample.scores or {}).get("mmconvert")
            scored = None
            if score is not None and error is None:
                scored = Scored(float(score.value), score.answer,
                                bool((score.metadata or {}).get("parsed", True)),
                                {k: v for k, v in (score.metadata or {}).items()
                                 if k != "parsed"})
            item, _, page = str(sample.id).partition(PAGE_MARK)
            outcome = Outcome(item, condition, subsets[item], pages[item],
                              sample.output.completion if sample.output else None, scored,
                              error, cells[item])
            if page:
                by_page.setdefault(item, {})[int(page)] = outcome
            else:
                found[(item, condition)] = outcome
    for row in rows:
        if row.id in by_page:
            found[(row.id, "transcribe")] = read_by_page(row, by_page[row.id])
    return [found[(row.id, c)] for row in rows for c in CONDITIONS if (row.id, c) in found]


_RETRIED = re.compile(r"RetryError\W+<Future at \w+ state=\w+ raised (\w+)>")


def request_error(message: str, timeout: int | None, traceback: str = "") -> str:
    """A failed request's error in one line, saying what was waited for when it was the
    answer (inspect reports a timed-out attempt as a RetryError around AttemptTimeoutError),
    and the error itself, not tenacity's wrapper round it ("RetryError(<Future at 0x…
    raised InternalServerError>)" said nothing of the server's answer): its line from the
    traceback, after the retries."""
    text = squeezed(message)
    retried = _RETRIED.search(text)
    if retried:
        raised = retried.group(1)
        found = [line.strip() for line in (traceback or "").splitlines()
                 if re.match(rf"^[\w.]*\b{re.escape(raised)}: ", line.strip())]
        text = found[0] if found else raised
        text = f"{squeezed(text)[:240]} (after the retries)"
    if timeout is not None and "TimeoutError" in text:
        return f"no complete answer within --timeout {timeout} s ({text[:160]})"
    return text


def squeezed(message: str) -> str:
    """A message's words on one line, cut to 300 characters (an error of the harness's
    logs, for results.json and the one-line error)."""
    text = " ".join(str(message).split())
    return text[:300]
