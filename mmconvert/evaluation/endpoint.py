"""The endpoint ``mmconvert eval`` talks to: its key from the environment, a check that it
answers before any work, and the HTTP client inspect_ai sends through, which caps a reply's
size and refuses a redirect to another origin."""

from __future__ import annotations

import functools
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING

from ..api.inflate import ENCODINGS, Inflater
from ..errors import MMConvertError, UsageError, did_you_mean

if TYPE_CHECKING:
    from .run import EvalOptions

SERVICE = "MMCONVERT"  # inspect's openai-api/<service>/<model> reads <SERVICE>_BASE_URL, _API_KEY
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


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
    names = [str(m.get("id")) for m in data if isinstance(m, dict)] \
        if isinstance(data, list) else []
    if names and options.model not in names:
        raise UsageError(f"{options.base_url} serves no model {options.model!r} (it serves "
                         f"{', '.join(names[:8])}{'…' if len(names) > 8 else ''})"
                         f"{did_you_mean(options.model, names)}")


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
        """The reply's body, its gzip or deflate encoding undone here in steps (httpx would
        inflate a bomb whole), no more than ``cap`` bytes of it."""

        def __init__(self, stream, cap: int, encoding: str = ""):
            self.stream, self.cap, self.encoding = stream, cap, encoding

        def _over(self) -> ReplyTooLarge:
            mib = self.cap // (1024 * 1024)
            if self.encoding:
                return ReplyTooLarge(f"the reply's {self.encoding} body inflates past {mib} "
                                     "MiB (a compression bomb); not read further")
            return ReplyTooLarge(f"the reply is over {mib} MiB; not read further")

        async def __aiter__(self):
            if self.encoding:
                inflater = Inflater(self.encoding, self.cap, self._over)
                async for chunk in self.stream:
                    yield inflater.feed(chunk)
                yield inflater.flush()
                return
            read = 0
            async for chunk in self.stream:
                read += len(chunk)
                if read > self.cap:
                    raise self._over()
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
            request.headers["Accept-Encoding"] = "gzip, deflate"  # the ones inflated here
            response = await self.inner.handle_async_request(request)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.cap:
                await response.aclose()
                raise ReplyTooLarge(f"the reply declares {int(declared):,} bytes, over "
                                    f"{self.cap // (1024 * 1024)} MiB; not read")
            encoding = response.headers.get("content-encoding", "").strip().lower()
            if encoding in ("identity",):
                encoding = ""
            if encoding and encoding not in ENCODINGS:
                await response.aclose()
                raise ReplyTooLarge(f"the reply is encoded {encoding!r}, which was not asked "
                                    "for; not read")
            headers = httpx2.Headers(response.headers)
            if encoding:  # inflated by the stream: httpx must not inflate it again
                del headers["content-encoding"]
                headers.pop("content-length", None)
            return httpx2.Response(response.status_code, headers=headers,
                                   stream=CappedStream(response.stream, self.cap, encoding),
                                   extensions=response.extensions, request=request)

        async def aclose(self):
            await self.inner.aclose()

    return CappedTransport
