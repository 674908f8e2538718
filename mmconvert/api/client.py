"""Calls to OpenAI-compatible servers (image generation and chat), through the ``openai``
client, with the response cache in front and the budget beside.

Retries are the ``openai`` client's own (``max_retries`` = ``--max-tries`` - 1): it honours
Retry-After on 429 (up to two minutes) and backs off exponentially with jitter on 408, 409,
5xx, timeouts and dropped connections. What is left after the last try becomes an
``ApiFailure`` for the item; a content-policy refusal or a malformed response is recorded as
such and not retried; a bad key or an unknown model stops the run.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import json
import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from ..errors import MMConvertError, UsageError
from .cache import CachedResponse, ResponseCache, default_cache_dir, request_key
from .errors import ApiFailure, ApiFatal, ApiMalformed, ApiRefusal
from .inflate import ENCODINGS, Inflater
from .prices import Budget, Cost, PriceTable

if TYPE_CHECKING:
    from ..config import ApiOptions

REFUSAL_CODES = {"moderation_blocked", "content_policy_violation", "content_filter"}
IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"RIFF")


@dataclass(frozen=True)
class ApiResult:
    data: dict[str, Any]
    header: dict[str, Any]
    cost: Cost
    cached: bool

    @property
    def response_id(self) -> str | None:
        return self.data.get("id") or self.header.get("request_id")

    def provenance(self) -> dict[str, Any]:
        """What the manifest records of a call: the same whether it came from the cache."""
        return {"model": self.header["params"].get("model"), "response_id": self.response_id,
                "created": self.data.get("created"), "usage": self.data.get("usage"),
                "cost": self.cost.as_dict(), "cache_key": self.header["key"]}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _is_loopback(url: str | None) -> bool:
    host = urlparse(url or "").hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# the most a response body may hold once its Content-Encoding is undone: a 4096-px image as
# base64 JSON is under 64 MiB; a gzip of 1 MiB that inflates to 1 GiB is refused at this
MAX_RESPONSE_BYTES = 128 << 20


class ResponseTooLarge(Exception):
    """A response body past ``MAX_RESPONSE_BYTES`` (said as its Content-Length, or found
    while it is inflated): not read further."""


def bounded(response) -> None:
    """An httpx response hook: the body is read here, with its Content-Encoding undone in
    steps, and refused past ``MAX_RESPONSE_BYTES``, so that no reader after this one inflates
    a gzip bomb whole (it ended as "TypeError: 'NoneType' object is not iterable" or "no
    data[0]", nothing naming the cause)."""
    length = response.headers.get("content-length")
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if length and length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
        response.close()
        raise ResponseTooLarge(f"the response says it holds {int(length):,} bytes, over the "
                               f"{MAX_RESPONSE_BYTES >> 20} MiB a response may hold")
    if encoding in ("", "identity") or hasattr(response, "_content"):  # or read already
        return
    if encoding not in ENCODINGS:
        response.close()
        raise ResponseTooLarge(f"the response is encoded {encoding!r}, which mmconvert does "
                               "not read (it asks for gzip or none)")

    def over() -> ResponseTooLarge:
        response.close()
        return ResponseTooLarge(f"the response's {encoding} body inflates past the "
                                f"{MAX_RESPONSE_BYTES >> 20} MiB a response may hold (a "
                                "compression bomb); not read further")

    inflater = Inflater(encoding, MAX_RESPONSE_BYTES, over)
    parts = [inflater.feed(chunk) for chunk in response.iter_raw()]
    parts.append(inflater.flush())
    response._content = b"".join(parts)  # read: httpx's own decoder is not run on it
    del response.headers["content-encoding"]


def _error_text(err: Exception) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        message = body.get("message") or (body.get("error") or {}).get("message")
        if message:
            return str(message)
    return str(getattr(err, "message", err))


class ApiClient:
    """One per run, shared by the worker threads."""

    def __init__(self, options: ApiOptions, prices: PriceTable | None = None):
        self.options = options
        self.prices = prices or PriceTable.load(options.price_table)
        self.cache = ResponseCache(options.cache_dir or default_cache_dir())
        self.budget = Budget(options.budget)
        # counts (ints) and the money paid (floats); a Counter, so a first += starts at 0
        self.stats: dict[str, Any] = Counter()
        self._lock = threading.Lock()
        self._clients: dict[str, Any] = {}
        self.fatal: ApiFatal | None = None  # once set, no more requests are made

    # --- clients -------------------------------------------------------------------------

    def base_url(self, side: str) -> str:
        given = self.options.image_base_url if side == "image" else self.options.chat_base_url
        return (given or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1")

    def api_key(self, side: str) -> str:
        name = (self.options.chat_api_key_env if side == "chat" else None) \
            or self.options.api_key_env
        key = os.environ.get(name)
        if key:
            return key
        if _is_loopback(self.base_url(side)):
            return "EMPTY"  # local servers (vLLM) take any key
        raise UsageError(f"{name} is not set: the {side} API key is read from the environment "
                         "only (--api-key-env names another variable)")

    def client(self, side: str):
        with self._lock:
            if side not in self._clients:
                import openai

                http = openai.DefaultHttpxClient(
                    event_hooks={"response": [self._count, bounded]},
                    headers={"Accept-Encoding": "gzip"})
                self._clients[side] = openai.OpenAI(
                    api_key=self.api_key(side), base_url=self.base_url(side),
                    max_retries=self.options.max_tries - 1, timeout=self.options.timeout,
                    http_client=http)
            return self._clients[side]

    def check_keys(self, sides: tuple[str, ...] = ("image", "chat")) -> None:
        for side in sides:
            self.api_key(side)

    def _count(self, response) -> None:
        with self._lock:
            self.stats["http_responses"] += 1
            self.stats[f"http_{response.status_code}"] += 1

    # --- calls ---------------------------------------------------------------------------

    def image(self, params: dict[str, Any], *, item_id: str, seed: int,
              estimate: Cost) -> ApiResult:
        """One ``images.generate`` call; ``data["image"]`` holds the decoded image bytes."""
        def send():
            return self.client("image").images.with_raw_response.generate(**params)
        return self._call("image", params, item_id, seed, estimate, send)

    def chat(self, params: dict[str, Any], *, item_id: str, seed: int, estimate: Cost,
             purpose: str, parse: Callable[[str], Any] | None = None) -> ApiResult:
        """One ``chat.completions.create`` call; ``data["text"]`` holds the reply and
        ``data["parsed"]`` what ``parse`` made of it (it raises ``ApiMalformed`` on a reply it
        cannot use, which then counts as a failed response, cached or not)."""
        def send():
            return self.client("chat").chat.completions.with_raw_response.create(**params)
        return self._call("chat", params, item_id, seed, estimate, send, purpose, parse)

    def cached(self, side: str, params: dict[str, Any], item_id: str, seed: int) -> bool:
        """Whether this request's response is already in the cache (``--dry-run``)."""
        return self._key(side, params, item_id, seed)[0] in self.cache

    def _key(self, side: str, params: dict[str, Any], item_id: str,
             seed: int) -> tuple[str, dict[str, Any]]:
        endpoint = "images/generations" if side == "image" else "chat/completions"
        identity = {"endpoint": endpoint, "server": self.base_url(side), "params": params,
                    "item": item_id, "seed": seed}
        return request_key(identity), identity

    def _call(self, side: str, params: dict[str, Any], item_id: str, seed: int,
              estimate: Cost, send: Callable[[], Any], purpose: str = "image",
              parse: Callable[[str], Any] | None = None) -> ApiResult:
        key, identity = self._key(side, params, item_id, seed)
        hit = self.cache.get(key)
        if hit is not None:
            try:
                result = self._read(side, hit, estimate, parse, cached=True)
                with self._lock:
                    self.stats[f"{side}_cached"] += 1
                return result
            except ApiFailure:
                if not self.options.retry_failed:
                    raise
        import openai

        if self.fatal is not None:
            raise self.fatal
        reserved = self.budget.reserve(estimate)
        try:
            raw = send()
        except openai.OpenAIError as err:
            self.budget.settle(reserved, None)
            failure = self._failure(side, purpose, err)
            if isinstance(failure, ApiFatal):
                self.fatal = failure
            raise failure from None
        except ResponseTooLarge as err:  # raised by the response hook, not wrapped by openai
            self.budget.settle(reserved, None)
            raise ApiMalformed(f"{_api_name(side, purpose)} at {self.base_url(side)}: "
                               f"{err}") from None
        except BaseException:
            self.budget.settle(reserved, None)
            raise
        header = {**identity, "key": key, "purpose": purpose, "status": raw.status_code,
                  "request_id": raw.headers.get("x-request-id"), "received_at": _now()}
        stored = self.cache.put(key, header, raw.content)  # before anything reads it
        try:
            result = self._read(side, stored, estimate, parse, cached=False)
        except ApiFailure:
            self._paid(side, reserved, estimate)  # a bad answer that came back is paid for
            raise
        self._paid(side, reserved, result.cost)
        return result

    def _paid(self, side: str, reserved: float, cost: Cost) -> None:
        self.budget.settle(reserved, cost)
        with self._lock:
            self.stats[f"{side}_requests"] += 1
            self.stats[f"{side}_paid_usd"] += cost.usd or 0.0

    def _read(self, side: str, stored: CachedResponse, estimate: Cost,
              parse: Callable[[str], Any] | None, cached: bool) -> ApiResult:
        """Parse and check a stored response (the same checks for a fresh one and a cached
        one, so a response that failed them fails them again without a new request)."""
        what = _api_name(side, stored.header.get("purpose", "chat"))
        try:
            data = json.loads(stored.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ApiMalformed(f"{what}: malformed response (not JSON: "
                               f"{getattr(err, 'msg', err)})") from None
        if not isinstance(data, dict):
            raise ApiMalformed(f"{what}: malformed response (not a JSON object)")
        model = stored.header["params"].get("model", "")
        if side == "image":
            data["image"] = _image_bytes(data)
            cost = self.prices.image_cost(model, data.get("usage"), estimate)
        else:
            data["text"] = _reply_text(data)
            if parse is not None:
                data["parsed"] = parse(data["text"])
            cost = self.prices.chat_cost(model, data.get("usage"), estimate)
        return ApiResult(data, stored.header, cost, cached)

    def _failure(self, side: str, purpose: str, err: Exception) -> MMConvertError:
        import openai

        what = _api_name(side, purpose)
        tries = self.options.max_tries
        text = _error_text(err)
        if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError,
                            openai.NotFoundError)):
            return ApiFatal(f"{what} at {self.base_url(side)}: HTTP {err.status_code}: {text}")
        if isinstance(err, openai.APITimeoutError):
            return ApiFailure(f"{what}: timed out after {tries} tries "
                              f"({self.options.timeout:g} s each)")
        if isinstance(err, openai.APIConnectionError):
            return ApiFailure(f"{what}: connection failed after {tries} tries ({text})")
        if isinstance(err, openai.APIStatusError):
            code = getattr(err, "code", None)
            if code in REFUSAL_CODES or "safety system" in text.lower():
                return ApiRefusal(f"{what}: refused by the content policy: {text}")
            if err.status_code == 429 or err.status_code >= 500 or err.status_code in (408,
                                                                                       409):
                return ApiFailure(f"{what}: HTTP {err.status_code} after {tries} tries: {text}")
            return ApiFailure(f"{what}: request rejected (HTTP {err.status_code}): {text}")
        return ApiMalformed(f"{what}: malformed response ({text})")

    def report(self) -> dict[str, Any]:
        """This invocation's requests, cache hits, HTTP answers and money."""
        with self._lock:
            stats = dict(self.stats)
        out: dict[str, Any] = {k: (round(v, 6) if isinstance(v, float) else v)
                               for k, v in sorted(stats.items())}
        out["budget_usd"] = self.budget.limit
        out["paid_usd"] = round(self.budget.spent, 6)
        out["cache_dir"] = str(self.cache.root)
        out["price_table"] = {"origin": self.prices.origin, "as_of": self.prices.as_of}
        return out


def _api_name(side: str, purpose: str) -> str:
    """How messages name a call: ``image API``, or ``chat API (layout)``."""
    return "image API" if side == "image" else f"chat API ({purpose})"


def _image_bytes(data: dict[str, Any]) -> bytes:
    entries = data.get("data")
    if not isinstance(entries, list) or not entries or not isinstance(entries[0], dict):
        raise ApiMalformed("image API: malformed response (no data[0])")
    encoded = entries[0].get("b64_json")
    if not isinstance(encoded, str):
        raise ApiMalformed("image API: malformed response (data[0] has no b64_json)")
    try:
        image = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ApiMalformed("image API: malformed response (b64_json is not base64)") from None
    if not image.startswith(IMAGE_MAGIC):
        raise ApiMalformed("image API: malformed response (b64_json is not a PNG, JPEG or "
                           "WebP image)")
    return image


def _reply_text(data: dict[str, Any]) -> str:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ApiMalformed("chat API: malformed response (no choices[0])")
    choice = choices[0]
    message = choice.get("message") or {}
    if message.get("refusal") or choice.get("finish_reason") == "content_filter":
        raise ApiRefusal(f"chat API: refused: {message.get('refusal') or 'content filter'}")
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ApiMalformed("chat API: malformed response (no message content)")
    return content.strip()
