"""A small real HTTP server on 127.0.0.1 that speaks the parts of the OpenAI API mmconvert uses
(``POST /v1/images/generations``, ``POST /v1/chat/completions``), for the tests and the
benchmarks. Answers are deterministic: the same request gets the same bytes.

It can be told, per request whose prompt contains a given string, to answer 429 (with
Retry-After), 500, slowly, with malformed JSON, with a refusal, with 401, or to hang until
released. Every request is logged with its arrival and answer times.

    python tests/openai_server.py --port 8000 --delay 0.2 --image photo
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import io
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# gpt-image-1 output tokens per image (quality, longer side): what the API reports as usage
OUTPUT_TOKENS = {("low", 1024): 272, ("low", 1536): 408, ("medium", 1024): 1056,
                 ("medium", 1536): 1584, ("high", 1024): 4160, ("high", 1536): 6240}
DEPICTION = "A quiet reading room with tall wooden shelves, warm lamplight and an empty desk."


@dataclass
class Logged:
    path: str
    body: dict[str, Any]
    prompt: str
    started: float
    action: str
    finished: float | None = None
    status: int | None = None


@dataclass
class Rule:
    match: str
    actions: list[str]
    path: str | None = None


class _Server(ThreadingHTTPServer):
    # a client opening many connections at once (a benchmark at 16 or 64) on a busy machine
    # overflows socketserver's backlog of 5, and the connections it drops fail with a
    # ReadError: a backlog as deep as a real server's
    request_queue_size = 256
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)  # a client that hung up: quiet


@dataclass
class FakeOpenAI:
    """``delay``: seconds before every answer. ``image``: ``text`` draws the prompt's last
    paragraphs on a colour taken from its hash (small PNGs); ``flat`` returns one plain PNG
    of the asked size; ``photo`` returns one fixed 1536x1024 photo-like PNG of about 3.4 MB,
    as large as a real response. ``flat`` and ``photo`` are encoded once, so the server's own
    work stays out of a benchmark's figures."""

    delay: float = 0.0
    image: str = "text"
    usage: bool = True
    layout_answer: str | None = None  # None: background or interleaved by the prompt's hash
    key: str | None = None  # when set, requests must carry it as a bearer token
    # chat replies: answer(request body) -> text, in place of the fixed depiction
    answer: Any = None
    # GET /v1/models lists these (None: the server has no /models); a chat request for another
    # model is answered 404 model_not_found
    models: tuple[str, ...] | None = None
    # GET /v1/models answers 302 to this URL (another origin, in the attack tests)
    models_redirect: str | None = None
    # GET /v1/models answers these bytes as they are (a JSON list, say), with status 200
    models_body: bytes | None = None
    # GET /v1/models sends its answer a byte at a time, this many seconds apart (a
    # slow-loris server: every read gets a byte within any socket timeout)
    models_trickle: float | None = None
    # POST /v1/chat/completions answers 307 to this URL (another origin, in the attack tests)
    chat_redirect: str | None = None
    log: list[Logged] = field(default_factory=list)
    # the Authorization header of every request, GETs included
    authorizations: list[str | None] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)

    def __post_init__(self):
        self._lock = threading.Lock()
        self.release = threading.Event()
        self._photo: bytes | None = None
        self._flat: dict[tuple[int, int], bytes] = {}
        self._server: ThreadingHTTPServer | None = None

    # --- control -------------------------------------------------------------------------

    def script(self, match: str, *actions: str, path: str | None = None) -> None:
        """Answer the next requests whose prompt contains ``match`` with ``actions`` in turn
        (``ok``, ``429`` or ``429:SECONDS``, ``500``, ``slow:SECONDS``, ``malformed``,
        ``gzip`` (the usual answer gzip-encoded), ``gzipbomb`` (1 MiB of gzip that inflates
        to 1 GiB), ``refuse``, ``401``, ``hang``,
        ``cut``: an image without the text's last line, as when a model leaves out the last
        option); later ones are answered normally. ``path``: only
        ``images`` or ``chat`` requests."""
        with self._lock:
            self.rules.append(Rule(match, list(actions), path))

    def requests(self, path: str | None = None) -> list[Logged]:
        with self._lock:
            return [r for r in self.log if path is None or path in r.path]

    def _action(self, path: str, prompt: str) -> str:
        with self._lock:
            for rule in self.rules:
                if rule.actions and rule.match in prompt and (rule.path is None
                                                              or rule.path in path):
                    return rule.actions.pop(0)
        return "ok"

    def start(self, port: int = 0) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                fake._handle(self)

            def do_GET(self):
                fake._list_models(self)

        self._server = _Server(("127.0.0.1", port), Handler)
        # a short poll: stop()'s shutdown() waits for the loop's next look (0.5 s by default)
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         kwargs={"poll_interval": 0.05}).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def stop(self) -> None:
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # --- answers -------------------------------------------------------------------------

    def _list_models(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.authorizations.append(handler.headers.get("Authorization"))
        if self.models_redirect and handler.path.endswith("/models"):
            handler.send_response(302)
            handler.send_header("Location", self.models_redirect)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if self.models_trickle is not None and handler.path.endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "reader"}]}).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            try:
                for byte in body:
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
                    if self.release.wait(self.models_trickle):
                        return
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        if self.models_body is not None and handler.path.endswith("/models"):
            status, payload = 200, self.models_body
        elif not handler.path.endswith("/models") or self.models is None:
            status, payload = 404, _error("Not found", "invalid_request_error", None)
        elif self.key and handler.headers.get("Authorization") != f"Bearer {self.key}":
            status, payload = 401, _error("Incorrect API key provided.",
                                          "invalid_request_error", "invalid_api_key")
        else:
            status, payload = 200, json.dumps({"object": "list", "data": [
                {"id": name, "object": "model", "owned_by": "test"}
                for name in self.models]}).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        if self.chat_redirect and handler.path.endswith("/chat/completions"):
            with self._lock:
                self.log.append(Logged(handler.path, {}, "", started, "307"))
            handler.send_response(307)
            handler.send_header("Location", self.chat_redirect)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = {}
        path = handler.path
        if path.endswith("/images/generations"):
            prompt = body.get("prompt", "")
        else:
            prompt = "\n".join(_text(m.get("content", "")) for m in body.get("messages", []))
        action = self._action(path, prompt)
        entry = Logged(path, body, prompt, started, action)
        with self._lock:
            self.log.append(entry)
        if handler.headers.get("Authorization") != f"Bearer {self.key}" and self.key:
            action = "401"
        status, headers, payload = self._answer(path, body, prompt, action)
        if self.delay:
            time.sleep(self.delay)
        try:
            handler.send_response(status)
            for name, value in {"Content-Type": "application/json",
                                "Content-Length": str(len(payload)), **headers}.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        entry.finished, entry.status = time.monotonic(), status

    def _answer(self, path: str, body: dict, prompt: str, action: str):
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        headers = {"x-request-id": f"req_{digest[:24]}"}
        kind, _, arg = action.partition(":")
        if kind == "hang":
            self.release.wait()
        elif kind == "slow":
            time.sleep(float(arg))
        elif kind == "429":
            return 429, {**headers, "Retry-After": arg or "1"}, _error(
                "Rate limit reached for requests", "requests", "rate_limit_exceeded")
        elif kind == "500":
            return 500, headers, _error("The server had an error while processing your "
                                        "request.", "server_error", None)
        elif kind == "401":
            return 401, headers, _error("Incorrect API key provided.",
                                        "invalid_request_error", "invalid_api_key")
        elif kind == "malformed":
            return 200, headers, b'{"created": 1700000000, "data": [{"b64_json": "iVBO'
        elif kind == "gzipbomb":  # 1 GiB of spaces inside a JSON string, 1 MiB on the wire
            return 200, {**headers, "Content-Encoding": "gzip"}, _gzip_bomb()
        if self.models is not None and path.endswith("/chat/completions") and \
                body.get("model") not in self.models:
            return 404, headers, _error(f"The model `{body.get('model')}` does not exist.",
                                        "invalid_request_error", "model_not_found")
        if kind == "gzip":  # the answer it would give, gzip-encoded, as real servers do
            status, headers, payload = self._answer(path, body, prompt, "ok")
            import gzip

            return status, {**headers, "Content-Encoding": "gzip"}, gzip.compress(payload)
        if path.endswith("/images/generations"):
            if kind == "refuse":
                return 400, headers, _error(
                    "Your request was rejected as a result of our safety system.",
                    "image_generation_user_error", "moderation_blocked")
            return 200, headers, self._image(body, prompt, cut=kind == "cut")
        return 200, headers, self._chat(body, prompt, digest, refuse=kind == "refuse")

    def _image(self, body: dict, prompt: str, cut: bool = False) -> bytes:
        size = body.get("size", "1024x1024")
        width, height = (int(v) for v in size.split("x"))
        if self.image == "photo":
            encoded = self._photo_b64()
        elif self.image == "flat":
            encoded = self._flat_b64(width, height)
        else:
            encoded = base64.b64encode(_text_png(prompt, width, height, cut))
        out: dict[str, Any] = {"created": 1700000000, "background": "opaque",
                               "data": [{"b64_json": "@"}], "output_format": "png",
                               "quality": body.get("quality"), "size": size}
        if self.usage:
            text_tokens = max(1, len(prompt) // 4)
            output = OUTPUT_TOKENS.get((body.get("quality"), max(width, height)), 4160)
            out["usage"] = {"input_tokens": text_tokens, "output_tokens": output,
                            "total_tokens": text_tokens + output,
                            "input_tokens_details": {"text_tokens": text_tokens,
                                                     "image_tokens": 0}}
        head, tail = json.dumps(out).encode().split(b'"@"', 1)
        return b"".join((head, b'"', encoded, b'"', tail))

    def _chat(self, body: dict, prompt: str, digest: str, refuse: bool) -> bytes:
        if "background or interleaved" in prompt:
            reply = self.layout_answer or ("background" if int(digest[:2], 16) % 2
                                           else "interleaved")
        elif self.answer is not None:
            reply = self.answer(body)
        else:
            reply = DEPICTION
        message = {"role": "assistant", "content": None if refuse else reply,
                   "refusal": "I can't help with that." if refuse else None}
        out = {"id": f"chatcmpl-{digest[:20]}", "object": "chat.completion",
               "created": 1700000000, "model": body.get("model"),
               "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        if self.usage:
            out["usage"] = {"prompt_tokens": max(1, len(prompt) // 4),
                            "completion_tokens": len(reply.split()),
                            "total_tokens": max(1, len(prompt) // 4) + len(reply.split())}
        return json.dumps(out).encode()

    def _flat_b64(self, width: int, height: int) -> bytes:
        """One plain light-grey PNG per size, encoded once."""
        key = (width, height)
        if key not in self._flat:
            from PIL import Image

            out = io.BytesIO()
            Image.new("RGB", key, (235, 235, 230)).save(out, "PNG")
            self._flat[key] = base64.b64encode(out.getvalue())
        return self._flat[key]

    def _photo_b64(self) -> bytes:
        """The photo, base64-encoded once (the server's own cost stays small)."""
        if self._photo is None:
            self._photo = base64.b64encode(photo_png())
        return self._photo


def _text(content: Any) -> str:
    """A chat message's text: the string, or its text parts (images left out)."""
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return str(content)


@functools.lru_cache(maxsize=1)
def _gzip_bomb() -> bytes:
    """A gzip body of about 1 MiB that inflates to a 1 GiB JSON document."""
    import gzip
    import io

    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as packed:
        packed.write(b'{"id": "x", "choices": [{"message": {"content": "')
        block = b" " * (1 << 20)
        for _ in range(1024):
            packed.write(block)
        packed.write(b'"}}]}')
    return out.getvalue()


def _error(message: str, kind: str, code: str | None) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None,
                                 "code": code}}).encode()


def _text_png(prompt: str, width: int, height: int, cut: bool = False) -> bytes:
    """The prompt's last paragraphs (the item text, in the shipped templates) in black on a
    light colour taken from the prompt's hash; ``cut`` leaves out the last line."""
    from PIL import Image, ImageDraw, ImageFont

    shade = hashlib.sha256(prompt.encode()).digest()
    image = Image.new("RGB", (width, height), tuple(200 + b % 56 for b in shade[:3]))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=28)
    y = 40
    text = prompt.strip()
    if cut:
        text = text.rsplit("\n", 1)[0]
    for paragraph in text.split("\n\n")[-3:]:
        for line in paragraph.splitlines():
            words, current = line.split(), ""
            for word in words:
                if draw.textlength(f"{current} {word}".strip(), font=font) > width - 80:
                    draw.text((40, y), current, fill="black", font=font)
                    y, current = y + 36, word
                else:
                    current = f"{current} {word}".strip()
            draw.text((40, y), current, fill="black", font=font)
            y += 36
        y += 20
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()


def photo_png(width: int = 1536, height: int = 1024) -> bytes:
    """A fixed photo-like PNG (smooth colour fields with grain), about as large as a real
    1536x1024 response."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack([128 + 90 * np.sin(x / 170 + c) * np.cos(y / 130 - c) for c in (0, 1, 2)],
                    axis=-1)
    grain = rng.normal(0, 9, size=base.shape)
    pixels = np.clip(base + grain, 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, "PNG")
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--image", choices=["text", "flat", "photo"], default="text")
    args = parser.parse_args()
    fake = FakeOpenAI(delay=args.delay, image=args.image)
    if args.image == "photo":
        fake._photo_b64()
    print(fake.start(args.port), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
