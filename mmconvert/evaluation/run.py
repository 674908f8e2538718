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
import functools
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from ..errors import MMConvertError, SourceError, UsageError
from ..executors import local_executor
from ..manifest import JsonlLog, write_json
from ..options import OPTIONS, cli
from ..renderers import renderer_class
from ..runfolder import LOCK, locked, open_run, read_recorded
from ..scoring.spec import (
    Scored,
    free_form,
    metric_name,
    score_row,
    spec_of,
    unscorable,
)
from .judge import judge_prompt, read_judgement
from .paired import mcnemar_exact, paired_bootstrap

Condition = Literal["image", "text", "text-image"]
CONDITIONS: tuple[Condition, ...] = ("image", "text", "text-image")
SERVICE = "MMCONVERT"  # inspect's openai-api/<service>/<model> reads <SERVICE>_BASE_URL, _API_KEY
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


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
    modality: list[Condition] = Field(
        default_factory=lambda: ["image", "text"], min_length=1,
        description="conditions, comma-separated: image, text, text-image (occlusions' "
                    "text-only image)", json_schema_extra=cli(split=True))
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
        from ..vision_tokens import token_rule

        for name in names or []:
            token_rule(name)  # an unknown model: one line with a did-you-mean
        return names


@dataclass
class Plan:
    """The items and requests of an evaluation, before any is sent."""

    rows: list[dict[str, Any]]
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


def select_rows(run: Path, options: EvalOptions) -> list[dict[str, Any]]:
    rows = open_run(run).rows()
    if options.subsets:
        unknown = [s for s in options.subsets if s not in {r.get("subset") for r in rows}]
        if unknown:
            raise UsageError(f"--subset {unknown[0]}: no item of {run} is in it")
        rows = [r for r in rows if r.get("subset") in options.subsets]
    if options.limit:
        rows = rows[:options.limit]
    if not rows:
        raise SourceError(f"{run}: no items to evaluate")
    if any(not r.get("text_prompt") for r in rows):
        raise SourceError(f"{run}: its rows have no text_prompt, the text-only twin the "
                          "comparison needs; render the corpus again with this mmconvert "
                          "(every renderer writes one)")
    return rows


def conditions_for(rows: list[dict[str, Any]], wanted: list[Condition], run: Path
                   ) -> list[Condition]:
    twins = all(renderer_class(r["renderer"]["name"]).twin_roles for r in rows)
    if "text-image" in wanted and not twins:
        raise UsageError(f"--modality text-image: the rows of {run} have no text-only image "
                         "(only occlusions do)")
    return [c for c in CONDITIONS if c in wanted]


def images_of(row: dict[str, Any], condition: Condition) -> list[dict[str, Any]]:
    renderer = renderer_class(row["renderer"]["name"])
    roles = {"image": renderer.shown_roles, "text-image": renderer.twin_roles}.get(condition, ())
    return [image for image in row["images"] if image.get("role") in roles]


def prompt_of(row: dict[str, Any], condition: Condition) -> str:
    return row["text_prompt"] if condition == "text" else row["prompt"]


def plan(run: Path, options: EvalOptions) -> Plan:
    """Requests, vision tokens under each stats rule, and the estimated cost (the shipped
    price table; None for a model it does not list)."""
    from ..api.prices import PriceTable, estimate_tokens
    from ..vision_tokens import TOKEN_RULES, image_tokens

    rows, unscored = [], []
    for row in select_rows(run, options):
        why = unscorable(row)
        if why is None:
            rows.append(row)
        else:
            unscored.append({"id": row["id"], "reason": why})
    if not rows:
        raise SourceError(f"{run}: nothing to evaluate: none of its {len(unscored)} selected "
                          f"item(s) has a gold answer to score against (the first, "
                          f"{unscored[0]['id']}: {unscored[0]['reason']})")
    from ..scoring.answers import missing

    lacking = {missing(spec_of(row, options.protocol)) for row in rows} - {None}
    if lacking:  # a metric whose package is not installed: said before any request
        raise UsageError(sorted(lacking)[0])
    conditions = conditions_for(rows, options.modality, run)
    prompt_tokens = sum(estimate_tokens(prompt_of(row, condition))
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
        outputs = sum(max_tokens(row, options) for row in rows) * len(conditions)
        rule = table.image_rule(options.model)
        if rule is not None:  # the model's own rule, never another model's
            billed = image_tokens(rule, images)
        estimate = ((prompt_tokens + (billed or 0)) * prices.get("input", 0.0)
                    + outputs * prices.get("output", 0.0)) / 1_000_000
    return Plan(rows, conditions, len(rows) * len(conditions), tokens, estimate, unscored,
                images=len(images), image_tokens=billed)


def max_tokens(row: dict[str, Any], options: EvalOptions) -> int:
    if options.max_tokens:
        return options.max_tokens
    return 64 if row.get("prompt_style") == "direct" else 1024


# --- the endpoint -----------------------------------------------------------------------------


def api_key(options: EvalOptions) -> str:
    """The key, from the environment only; a local endpoint needs none."""
    key = os.environ.get(options.api_key_env)
    if key:
        return key
    if any(f"//{host}" in options.base_url for host in LOCAL_HOSTS):
        return "none"
    raise UsageError(f"no API key: set {options.api_key_env} (the key is read from the "
                     "environment only), or pass --api-key-env with the variable that holds it")


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the origin (scheme, host, port) it came from: the key in
    the request's Authorization header is never sent to another."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (old.scheme, old.hostname, old.port) != (new.scheme, new.hostname, new.port):
            raise MMConvertError(f"{req.full_url} redirects to another origin ({new.scheme}://"
                                 f"{new.netloc}); the API key is not sent there: give "
                                 "--base-url the endpoint itself")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


MODELS_BYTES = 1 << 20  # a /models listing is a few KB; more is not read


def within(work, seconds: float):
    """``work()``'s result, or its exception, if it ends within ``seconds``; a TimeoutError
    otherwise (``work`` goes on, on a daemon thread, until its own socket gives up)."""
    import queue
    import threading

    done: queue.Queue = queue.Queue()

    def run() -> None:
        try:
            done.put((True, work()))
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            done.put((False, err))

    threading.Thread(target=run, name="mmconvert-models", daemon=True).start()
    try:
        ok, value = done.get(timeout=seconds)
    except queue.Empty:
        raise TimeoutError(f"no answer within {seconds} s") from None
    if not ok:
        raise value
    return value


def check_endpoint(options: EvalOptions, key: str) -> None:
    """One free request (``GET /models``) before any paid one: an unreachable endpoint, a
    rejected key and an unknown model are one line each. A redirect to another origin is
    refused (the key would go with it), and the answer is read within ``--timeout``."""
    url = options.base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    opener = urllib.request.build_opener(_SameOrigin)
    limit = min(options.timeout, 15)

    def fetch() -> bytes:
        with opener.open(request, timeout=limit) as answer:
            return answer.read(MODELS_BYTES)

    try:
        # the socket's timeout bounds each read, not the answer: a server that sends a byte
        # now and then held this past 150 s at --timeout 10; the whole answer is waited for
        # ``limit`` seconds at most
        listed = json.loads(within(fetch, limit) or b"{}")
    except TimeoutError:
        raise MMConvertError(f"{url}: no complete answer within {limit} s (--timeout); is "
                             "it an OpenAI-compatible endpoint?") from None
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            raise UsageError(f"{options.base_url} rejected the API key in "
                             f"{options.api_key_env} (HTTP {err.code})") from None
        return  # a server without /models: the model is checked by the first request
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise MMConvertError(f"cannot reach {options.base_url} ({reason})") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return
    data = listed.get("data") if isinstance(listed, dict) else None
    names = [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) \
        else []
    if names and options.model not in names:
        from ..errors import did_you_mean

        raise UsageError(f"{options.base_url} serves no model {options.model!r} (it serves "
                         f"{', '.join(names[:8])}{'…' if len(names) > 8 else ''})"
                         f"{did_you_mean(options.model, names)}")


# --- the inspect tasks ------------------------------------------------------------------------


def data_uri(data: bytes, path: str) -> str:
    kind = "jpeg" if path.lower().endswith((".jpg", ".jpeg")) else "png"
    return f"data:image/{kind};base64," + base64.b64encode(data).decode("ascii")


def build_tasks(run: Path, rows: list[dict[str, Any]], conditions: list[Condition],
                options: EvalOptions):
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import CachePolicy, ChatMessageUser, ContentImage, ContentText
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate

    by_id = {row["id"]: row for row in rows}

    judge = inspect_model(options.judge_model, options.base_url) if options.judge_model \
        else None

    @scorer(metrics=[mean()], name="mmconvert")
    def mmconvert_scorer():
        async def score(state, target):
            row = by_id[state.sample_id]
            response = state.output.completion or ""
            if judge is not None and free_form(row):
                reply = await judge.generate(judge_prompt(row, response),
                                             cache=CachePolicy(expiry=None))
                scored = read_judgement(reply.completion or "")
            else:
                scored = score_row(row, response, protocol=options.protocol)
            return Score(value=scored.value, answer=scored.answer,
                         metadata={"parsed": scored.parsed, **scored.extra})
        return score

    tasks = []
    for condition in conditions:
        samples = []
        for row in rows:
            content: list = [ContentImage(image=data_uri(read_recorded(
                run, image, where=f"{run / 'manifest.jsonl'} item {row['id']}",
                field="images"), image["path"])) for image in images_of(row, condition)]
            content.append(ContentText(text=prompt_of(row, condition)))
            samples.append(Sample(id=row["id"], input=[ChatMessageUser(content=content)],
                                  metadata={"condition": condition,
                                            "subset": row.get("subset") or "",
                                            "max_tokens": max_tokens(row, options)}))
        scorers = [mmconvert_scorer()]
        tasks.append(Task(name=f"{run.name}-{condition}".replace(" ", "_"),
                          dataset=MemoryDataset(samples),
                          solver=generate(cache=CachePolicy(expiry=None)),
                          scorer=scorers,
                          config=_generate_config(rows, options)))
    return tasks


def inspect_model(name: str, base_url: str):
    """inspect's OpenAI-compatible provider for ``name`` at ``base_url``; the key comes from the
    environment (``MMCONVERT_API_KEY``, set for this process only). Its ``openai`` client does
    not retry (``max_retries=0``): inspect's retry layer alone does, as many times as
    ``--max-retries`` says (the client's own two retries multiplied them: 3 attempts at
    ``--max-retries 0``)."""
    from inspect_ai.model import get_model

    return get_model(f"openai-api/{SERVICE.lower()}/{name}", base_url=base_url, memoize=False,
                     max_retries=0, http_client=capped_http_client(MAX_REPLY_BYTES, base_url))


# the most of one reply that is read (and so kept, in inspect's cache and logs and in
# responses.jsonl): a chat completion at any --max-tokens is far smaller; a server that sends
# more (50 MB replies kept whole took 764 MB for 8) fails that request instead
MAX_REPLY_BYTES = 4 * 1024 * 1024


def capped_http_client(cap: int, base_url: str | None = None):
    """The HTTP client inspect's provider would make, its transports wrapped so that no reply
    body past ``cap`` bytes is read, and no request goes to an origin other than
    ``base_url``'s (a redirect there is refused before anything is sent: the prompts and
    images, and the key, stay with the endpoint the user named)."""
    import httpx2
    from openai import DefaultAsyncHttpxClient

    try:  # inspect's own defaults (timeouts, limits, proxies), where this inspect has them
        from inspect_ai._util.http_defaults_httpx2 import default_client_kwargs

        kwargs = default_client_kwargs()
    except ImportError:
        kwargs = {}
    capped = _capped_transport_class()
    origin = _origin(base_url) if base_url else None
    kwargs["transport"] = capped(kwargs.get("transport") or httpx2.AsyncHTTPTransport(), cap,
                                 origin)
    kwargs["mounts"] = {key: None if mount is None else capped(mount, cap, origin)
                        for key, mount in (kwargs.get("mounts") or {}).items()}
    return DefaultAsyncHttpxClient(**kwargs)


class ReplyTooLarge(Exception):
    """A reply body past the cap: the request fails (and is retried as any failure is)."""


class OtherOrigin(Exception):
    """A request to an origin other than the endpoint's (a redirect followed): not sent."""


REDIRECTED = "redirected to another origin"


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port the scheme's when it names none."""
    parts = urllib.parse.urlsplit(str(url))
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


@functools.lru_cache(maxsize=1)
def _capped_transport_class():
    """A transport class over httpx2's (imported here: only ``eval`` needs it) that reads no
    reply body past its ``cap``."""
    import httpx2

    class CappedStream(httpx2.AsyncByteStream):
        def __init__(self, stream, cap: int):
            self.stream, self.cap = stream, cap

        async def __aiter__(self):
            read = 0
            async for chunk in self.stream:
                read += len(chunk)
                if read > self.cap:
                    raise ReplyTooLarge(f"the reply is over {self.cap // (1024 * 1024)} MiB; "
                                        "not read further")
                yield chunk

        async def aclose(self):
            await self.stream.aclose()

    class CappedTransport(httpx2.AsyncBaseTransport):
        def __init__(self, inner, cap: int, origin=None):
            self.inner, self.cap, self.origin = inner, cap, origin

        async def handle_async_request(self, request):
            if self.origin is not None and _origin(request.url) != self.origin:
                scheme, host, port = _origin(request.url)
                raise OtherOrigin(f"the endpoint {REDIRECTED} ({scheme}://{host}:{port}); "
                                  "nothing was sent there: give --base-url the endpoint "
                                  "itself")
            response = await self.inner.handle_async_request(request)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.cap:
                await response.aclose()
                raise ReplyTooLarge(f"the reply declares {int(declared):,} bytes, over "
                                    f"{self.cap // (1024 * 1024)} MiB; not read")
            return httpx2.Response(response.status_code, headers=response.headers,
                                   stream=CappedStream(response.stream, self.cap),
                                   extensions=response.extensions, request=request)

        async def aclose(self):
            await self.inner.aclose()

    return CappedTransport



def _generate_config(rows: list[dict[str, Any]], options: EvalOptions):
    from inspect_ai.model import GenerateConfig

    return GenerateConfig(temperature=0.0, max_tokens=max(max_tokens(r, options) for r in rows),
                          seed=options.seed)


# --- running and reading back -----------------------------------------------------------------


@dataclass
class Outcome:
    id: str
    condition: Condition
    subset: str
    pages: int
    response: str | None
    scored: Scored | None
    error: str | None = None
    # the item's cell of a two-way grid (metadata.grid: {row name: value, column name: value},
    # a haystack's length and depth), or None
    cell: tuple[tuple[str, str], tuple[str, str]] | None = None

    def as_row(self) -> dict[str, Any]:
        scored = self.scored
        return {"id": self.id, "condition": self.condition, "subset": self.subset,
                "pages": self.pages, "response": self.response,
                "answer": scored.answer if scored else None,
                "parsed": scored.parsed if scored else False,
                "score": scored.value if scored else None,
                **({"extra": scored.extra} if scored and scored.extra else {}),
                **({"error": self.error} if self.error else {})}


def evaluate(run: Path, out: Path, options: EvalOptions, *, display: str = "none",
             cache: Path | None = None) -> dict[str, Any]:
    """Run the evaluation into ``out`` (responses cached in ``cache``, default ``out/cache``);
    return results.json's content."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise UsageError("mmconvert eval needs inspect_ai: pip install 'mmconvert[eval]'") \
            from None
    from ..api.prices import BudgetReached

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
        from ..tokens import load_tokenizer

        load_tokenizer(options.tokenizer)
    key = api_key(options)
    check_endpoint(options, key)
    with locked(out / LOCK, out):  # one evaluation at a time into ``out``
        return _evaluate(run, out, options, todo, key, display, cache)


def _evaluate(run: Path, out: Path, options: EvalOptions, todo: Plan, key: str, display: str,
              cache: Path | None) -> dict[str, Any]:
    os.environ[f"{SERVICE}_BASE_URL"] = options.base_url
    os.environ[f"{SERVICE}_API_KEY"] = key  # this process only; never written anywhere
    os.environ["INSPECT_CACHE_DIR"] = str((cache or out / "cache").resolve())
    # one process per condition (the process executor): inspect's own bookkeeping is about
    # 10 ms of CPU a request in one event loop, so the conditions use a core each
    # (bench/eval_speed.py); the concurrency is shared between them
    share = max(1, options.concurrency // len(todo.conditions))
    values = options.model_dump()
    count = len(todo.conditions)
    tasks = [(run, out, values, todo.rows, condition, display if count == 1 else "none", share)
             for condition in todo.conditions]
    parts = list(local_executor(count, count).map(condition_worker, tasks))
    found = {(o.id, o.condition): o for part in parts for o in part}
    refused = next((o.error for o in found.values() if o.error and REDIRECTED in o.error),
                   None)
    if refused:  # no reply of another server is scored
        raise MMConvertError(f"{options.base_url}: {refused[refused.index('the endpoint'):]}"
                             if "the endpoint" in refused else refused)
    outcomes = [found[(row["id"], c)] for row in todo.rows for c in todo.conditions
                if (row["id"], c) in found]
    if outcomes and all(o.scored is None for o in outcomes):
        raise MMConvertError(f"every request to {options.base_url} failed (the first: "
                             f"{outcomes[0].error}); see inspect view --log-dir {out / 'logs'}")
    JsonlLog(out / "responses.jsonl").rewrite([o.as_row() for o in outcomes])
    results = summarise(outcomes, todo.conditions, options, run, todo.unscored)
    results["scoring"] = scoring_summary(todo.rows, outcomes, options)
    if options.tokenizer or options.ratio_models:
        results["compression"] = compression_of(todo.rows, options, outcomes)
    if "grid" in results:
        results["grid"]["flagged"] = [
            {"id": row["id"], "reason": row["metadata"]["grid_flag"]} for row in todo.rows
            if (row.get("metadata") or {}).get("grid_flag")]
        results["grid"]["heat_maps"] = [p.name for p in grid_heat_maps(results, out)] or \
            "none: matplotlib is missing (pip install 'mmconvert[stats]')"
    write_json(out / "results.json", results, indent=1)
    return results


def scoring_summary(rows: list[dict[str, Any]], outcomes: list[Outcome],
                    options: EvalOptions) -> dict[str, Any]:
    """What the items were scored by: the extractor's version, each metric and its items,
    the metric of each subset; for lm-eval generation tasks, every filter's metrics per
    condition (percent) and the task's primary one, as lm-eval's own table has them."""
    from ..scoring.answers import VERSION

    names = {row["id"]: metric_name(row, options.protocol) for row in rows}
    by_subset: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        by_subset[row.get("subset") or ""].add(names[row["id"]])
    out: dict[str, Any] = {
        "extractor": f"mmconvert.scoring.answers {VERSION}",
        "metrics": dict(sorted(Counter(names.values()).items())),
        "by_subset": {k: sorted(v)[0] if len(v) == 1 else sorted(v)
                      for k, v in sorted(by_subset.items())},
        **({"judge": options.judge_model} if options.judge_model else {})}
    filters: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    primary = None
    for o in outcomes:
        if o.scored is not None and "lm_eval" in o.scored.extra:
            for key, value in o.scored.extra["lm_eval"].items():
                filters[o.condition][key].append(value)
            primary = primary or o.scored.extra.get("primary")
    if filters:
        out["lm_eval"] = {"primary": primary, **{
            condition: {key: round(100 * sum(v) / len(v), 4) for key, v in sorted(keys.items())}
            for condition, keys in filters.items()}}
    return out


def compression_of(rows: list[dict[str, Any]], options: EvalOptions,
                   outcomes: list[Outcome] = ()) -> dict[str, Any]:
    """What the evaluated items' images cost beside what they score: vision tokens per item
    under each model's rule and, with ``--tokenizer``, text tokens and the ratio (text tokens
    over vision tokens), overall and per subset, as ``mmconvert stats`` counts them, and the
    image score by ratio: the items in four bins of equal count per model."""
    from ..stats import compression, item_tokens, summarise
    from ..tokens import load_tokenizer
    from ..vision_tokens import rules_for

    tokenizer = load_tokenizer(options.tokenizer) if options.tokenizer else None
    rules = rules_for(options.ratio_models)
    items = [item_tokens(row, rules, tokenizer) for row in rows]
    out = {"vision_tokens_per_item": {name: summarise([i["tokens"][name] for i in items])
                                      for name in rules}}
    if tokenizer is not None:
        out.update(compression(items, tokenizer, list(rules)))
        scores = {o.id: o.scored.value for o in outcomes
                  if o.condition == "image" and o.scored is not None}
        out["image_score_by_ratio"] = {name: score_by_ratio(items, scores, name)
                                       for name in rules}
    return out


def score_by_ratio(items: list[dict[str, Any]], scores: dict[str, float], name: str,
                   bins: int = 4) -> list[dict[str, Any]]:
    """The image score (percent) of the scored items in ``bins`` bins of (nearly) equal count
    by their ratio for model ``name``, lowest ratio first; an item without a ratio or a score
    is in none."""
    pairs = sorted((i["ratio"][name], scores[i["id"]]) for i in items
                   if i["ratio"][name] is not None and i["id"] in scores)
    out = []
    for k in range(min(bins, len(pairs))):
        part = pairs[k * len(pairs) // bins:(k + 1) * len(pairs) // bins]
        if part:
            out.append({"ratio": [part[0][0], part[-1][0]], "n": len(part),
                        "score": round(100 * sum(v for _, v in part) / len(part), 4)})
    return out


def condition_worker():
    """The executor's worker: one task is ``run_condition``'s arguments."""
    return lambda task: run_condition(*task)


def run_condition(run: Path, out: Path, values: dict[str, Any], rows: list[dict[str, Any]],
                  condition: Condition, display: str, concurrency: int) -> list[Outcome]:
    """One condition of the selected ``rows`` as one inspect task (in this process); its
    outcomes."""
    from inspect_ai import eval as inspect_eval

    options = EvalOptions.model_validate(values)
    (task,) = build_tasks(run, rows, [condition], options)
    # a model of its own for this endpoint (inspect memoizes models by name, and a second
    # evaluation in one process may talk to another server)
    model = inspect_model(options.model, options.base_url)
    logs = inspect_eval([task], model=model, log_dir=str(out / "logs"), display=display,
                        max_connections=concurrency, max_samples=concurrency,
                        # every attempt is bounded, a stalled or trickling body too
                        # (inspect cancels it): ``timeout`` alone bounds only the retries
                        max_retries=options.max_retries, attempt_timeout=options.timeout,
                        fail_on_error=False, log_images=False, score_display=False,
                        # the per-sample bookkeeping a live viewer needs costs about 40 % of
                        # inspect's own time per request (bench/eval_speed.py); the logs are
                        # written in full at the end of the task all the same
                        log_realtime=False, log_buffer=1000, log_model_api=False)
    return read_logs(logs, rows, options.timeout)


def read_logs(logs, rows: list[dict[str, Any]], timeout: int | None = None) -> list[Outcome]:
    """One outcome per item and condition, in manifest order."""
    pages = {row["id"]: len(images_of(row, "image")) for row in rows}
    subsets = {row["id"]: row.get("subset") or "" for row in rows}
    cells = {row["id"]: grid_cell(row) for row in rows}
    found: dict[tuple[str, str], Outcome] = {}
    for log in logs:
        if log.status == "error" and not log.samples:
            message = (log.error.message if log.error else "the evaluation failed")
            raise MMConvertError(one_line(message))
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
            found[(str(sample.id), condition)] = Outcome(
                str(sample.id), condition, subsets[str(sample.id)], pages[str(sample.id)],
                sample.output.completion if sample.output else None, scored, error,
                cells[str(sample.id)])
    return [found[(row["id"], c)] for row in rows for c in CONDITIONS if (row["id"], c) in found]


def grid_cell(row: dict[str, Any]) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """((row name, value), (column name, value)) of an item's ``metadata.grid``, or None."""
    grid = (row.get("metadata") or {}).get("grid")
    if not isinstance(grid, dict) or len(grid) != 2:
        return None
    return tuple((str(name), f"{value:g}" if isinstance(value, float) else str(value))
                 for name, value in grid.items())  # type: ignore[return-value]


_RETRIED = re.compile(r"RetryError\W+<Future at \w+ state=\w+ raised (\w+)>")


def request_error(message: str, timeout: int | None, traceback: str = "") -> str:
    """A failed request's error in one line, saying what was waited for when it was the
    answer (inspect reports a timed-out attempt as a RetryError around AttemptTimeoutError),
    and the error itself, not tenacity's wrapper round it ("RetryError(<Future at 0x…
    raised InternalServerError>)" said nothing of the server's answer): its line from the
    traceback, after the retries."""
    text = one_line(message)
    retried = _RETRIED.search(text)
    if retried:
        raised = retried.group(1)
        found = [line.strip() for line in (traceback or "").splitlines()
                 if re.match(rf"^[\w.]*\b{re.escape(raised)}: ", line.strip())]
        text = found[0] if found else raised
        text = f"{one_line(text)[:240]} (after the retries)"
    if timeout is not None and "TimeoutError" in text:
        return f"no complete answer within --timeout {timeout} s ({text[:160]})"
    return text


def one_line(message: str) -> str:
    text = " ".join(str(message).split())
    return text[:300]


def summarise(outcomes: list[Outcome], conditions: list[Condition], options: EvalOptions,
              run: Path, unscored: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """results.json: per condition the score (percent), n, unparsed share and errors; the
    paired image - text delta with its bootstrap interval and, for right/wrong scores, the
    exact McNemar p; the same per subset and per page count; the items with no gold answer,
    which no figure counts."""
    def group(members: list[Outcome]) -> dict[str, Any]:
        by_condition: dict[str, dict[str, Outcome]] = defaultdict(dict)
        for o in members:
            by_condition[o.condition][o.id] = o
        out: dict[str, Any] = {}
        for condition in conditions:
            done = [o for o in by_condition[condition].values() if o.scored is not None]
            values = [o.scored.value for o in done]
            unparsed = sum(1 for o in done if not o.scored.parsed)
            out[condition] = {
                "score": round(100 * sum(values) / len(values), 4) if values else None,
                "n": len(values), "unparsed": unparsed,
                "unparsed_share": round(100 * unparsed / len(values), 4) if values else None,
                "errors": sum(1 for o in by_condition[condition].values() if o.scored is None)}
            f1 = [o.scored.extra["f1"] for o in done if "f1" in o.scored.extra]
            if f1 and len(f1) == len(done):  # SQuAD's token F1 beside its exact match
                out[condition]["f1"] = round(100 * sum(f1) / len(f1), 4)
            spans = [o.scored.extra for o in done if "jaccard" in o.scored.extra]
            if spans:  # occlusions: VCR's figures, over spans as its tables are
                for name in ("exact_match", "jaccard"):
                    flat = [v for extra in spans for v in extra[name]]
                    out[condition][f"{name}_spans"] = round(100 * sum(flat) / len(flat), 4)
        if "image" in conditions and "text" in conditions:
            paired = [i for i, o in by_condition["image"].items()
                      if o.scored is not None and i in by_condition["text"]
                      and by_condition["text"][i].scored is not None]
            image = [by_condition["image"][i].scored.value for i in paired]
            text = [by_condition["text"][i].scored.value for i in paired]
            out["paired_n"] = len(paired)
            if paired:
                out["delta"] = round(100 * (sum(image) - sum(text)) / len(paired), 4)
                low, high = paired_bootstrap(image, text, seed=options.seed)
                out["delta_ci95"] = [round(100 * low, 4), round(100 * high, 4)]
                if all(v in (0.0, 1.0) for v in image + text):
                    out["mcnemar_p"] = mcnemar_exact([v == 1.0 for v in image],
                                                     [v == 1.0 for v in text])
            else:
                out["delta"], out["delta_ci95"] = None, None
        return out

    by_subset: dict[str, list[Outcome]] = defaultdict(list)
    by_pages: dict[int, list[Outcome]] = defaultdict(list)
    by_cell: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_subset[o.subset].append(o)
        by_pages[o.pages].append(o)
        if o.cell is not None:
            by_cell[o.cell].append(o)
    judge = ({"model": options.judge_model, "rubric": "0-10, SCORE: N (scoring.RUBRIC)",
              "applies_to": "items without options, spans or a paper's scorer"}
             if options.judge_model else None)
    return {"run": str(run.resolve()), "model": options.model, "base_url": options.base_url,
            "conditions": list(conditions), "protocol": options.protocol, "seed": options.seed,
            "judge": judge,
            "unscored": {"n": len(unscored or []), "items": unscored or []},
            "overall": group(outcomes),
            "subsets": {name: group(members) for name, members in sorted(by_subset.items())},
            "pages": {str(n): group(members) for n, members in sorted(by_pages.items())},
            **({"grid": grid_of(by_cell, group)} if by_cell else {})}


def grid_of(by_cell: dict[tuple, list[Outcome]], group) -> dict[str, Any]:
    """The figures of each cell of a two-way grid (a haystack's length × depth), rows and
    columns in the items' order."""
    keys = list(by_cell)
    rows = list(dict.fromkeys(r for (_, r), _ in keys))
    columns = list(dict.fromkeys(c for _, (_, c) in keys))
    (row_name, _), (column_name, _) = keys[0]
    return {"rows": row_name, "columns": column_name, "row_values": rows,
            "column_values": columns,
            "cells": {r: {c: group(by_cell[((row_name, r), (column_name, c))])
                          for c in columns if ((row_name, r), (column_name, c)) in by_cell}
                      for r in rows}}


def grid_table(results: dict[str, Any], condition: str) -> str:
    """A grid's scores for ``condition`` as a text table: a row per row value, a column per
    column value."""
    grid = results["grid"]
    head = f"{grid['rows'] + ' / ' + grid['columns']:<18}" + "".join(
        f"{c:>8}" for c in grid["column_values"])
    lines = [f"{condition}: score by {grid['rows']} and {grid['columns']}", head]
    for r in grid["row_values"]:
        cells = grid["cells"].get(r, {})
        lines.append(f"{r:<18}" + "".join(
            f"{cells[c][condition]['score']:8.1f}" if c in cells and
            cells[c][condition]["score"] is not None else f"{'-':>8}"
            for c in grid["column_values"]))
    return "\n".join(lines)


def grid_heat_maps(results: dict[str, Any], out: Path) -> list[Path]:
    """A heat map of each condition's grid scores (``grid-<condition>.png``); none without
    matplotlib (the ``[stats]`` extra), which the caller says."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from ..stats import write_figure

    grid = results["grid"]
    written = []
    for condition in results["conditions"]:
        values = [[(grid["cells"].get(r, {}).get(c) or {}).get(condition, {}).get("score")
                   for c in grid["column_values"]] for r in grid["row_values"]]
        data = [[float("nan") if v is None else v for v in line] for line in values]
        figure, axes = plt.subplots(figsize=(1.0 + 0.6 * len(grid["column_values"]),
                                             1.2 + 0.5 * len(grid["row_values"])))
        shown = axes.imshow(data, vmin=0, vmax=100, cmap="RdYlGn", aspect="auto")
        axes.set_xticks(range(len(grid["column_values"])), grid["column_values"])
        axes.set_yticks(range(len(grid["row_values"])), grid["row_values"])
        axes.set_xlabel(grid["columns"])
        axes.set_ylabel(grid["rows"])
        axes.set_title(f"{results['model']}: {condition}")
        for i, line in enumerate(values):
            for j, v in enumerate(line):
                if v is not None:
                    axes.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7)
        figure.colorbar(shown, ax=axes, label="score (%)")
        figure.tight_layout()
        path = out / f"grid-{condition}.png"
        write_figure(figure, path, metadata={"Software": None})
        plt.close(figure)
        written.append(path)
    return written


def table(results: dict[str, Any]) -> str:
    """The figures as an aligned text table."""
    conditions = results["conditions"]

    def cell(value, width=8):
        if isinstance(value, (int, float)):
            return f"{value:{width}.1f}"
        return f"{'-':>{width}}"

    names = ["all", *(f"subset {k}" for k in results["subsets"]),
             *(f"{k} page(s)" for k in results["pages"])]
    width = max(24, *map(len, names)) + 1  # subset names whole, never cut
    head = f"{'group':<{width}}" + "".join(f"{c:>12}" for c in conditions) + f"{'n':>6}"
    paired = "image" in conditions and "text" in conditions
    if paired:
        head += f"{'delta':>8}  {'95% CI':>16}{'McNemar p':>11}"
    lines = [f"{results['model']} on {results['run']}", head]

    def line(name: str, group: dict[str, Any]) -> str:
        text = f"{name:<{width}}" + "".join(cell(group[c]["score"], 12) for c in conditions)
        text += f"{group[conditions[0]]['n']:>6}"
        if paired:
            ci = group.get("delta_ci95")
            text += cell(group.get("delta"), 8) + (
                f"  [{ci[0]:6.1f}, {ci[1]:6.1f}]" if ci else f"{'-':>18}")
            p = group.get("mcnemar_p")
            text += f"{p:>11.4f}" if p is not None else f"{'-':>11}"
        return text

    lines.append(line("all", results["overall"]))
    lines += [line(f"subset {k}", v) for k, v in results["subsets"].items()]
    lines += [line(f"{k} page(s)", v) for k, v in results["pages"].items()]
    unparsed = ", ".join(f"{c} {results['overall'][c]['unparsed_share'] or 0:.1f} %"
                         for c in conditions)
    errors = sum(results["overall"][c]["errors"] for c in conditions)
    if "grid" in results:
        lines += ["", *(grid_table(results, c) for c in conditions), ""]
    lines.append(f"unparsed answers (scored 0): {unparsed}; {errors} request(s) failed")
    unscored = (results.get("unscored") or {}).get("n")
    if unscored:
        lines.append(f"{unscored} item(s) unscored: no gold answer to score against (not "
                     "sent, not in n or the score; see results.json)")
    return "\n".join(lines)
