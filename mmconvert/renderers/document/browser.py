"""Chromium, through Playwright: one browser a worker, kept open and started again if it
dies, with JavaScript off, no system font and no network (every request goes to one handler
that serves mmconvert's fonts and the item's own images, and refuses anything else)."""

from __future__ import annotations

import atexit
import functools
import html
import os
import queue
import re
import shutil
import tempfile
import threading
from pathlib import Path

from ...errors import UsageError, first_line, needs
from ..fonts import FONT_DIR
from .css import HOST

NO_PLAYWRIGHT = needs("the document renderer", "Playwright", "document")

# elements open at once that Chromium's HTML parser nests (past it, it sets them beside their
# parents: the page no longer draws what the HTML says)
MAX_DOM_DEPTH = 512
# prints (and layouts) asked for ahead and not yet taken, at most (a worker's next item, and
# a spare)
AHEAD = 2


# Debian's Chromium builds, the fastest printer first: the headless shell prints a short item
# in 7 ms where the full browser, in its headless mode, takes 23 (bench/document_speed.py);
# the two lay a page out alike to a subpixel, not to the byte, so a run records which drew it
CHROMIUMS = ("chromium-headless-shell", "chromium", "chromium-browser")
NO_CHROMIUM = ("the document renderer needs Chromium: apt-get install chromium-headless-shell "
               "(scripts/install-debian.sh)")


def chromium_path() -> str:
    """Debian's Chromium headless shell, else its chromium (or MMCONVERT_CHROMIUM); one line
    naming the package otherwise."""
    given = os.environ.get("MMCONVERT_CHROMIUM")
    if given and not Path(given).is_file():
        raise UsageError(f"MMCONVERT_CHROMIUM={given}: no such file; {NO_CHROMIUM}")
    path = given or next(filter(None, map(shutil.which, CHROMIUMS)), None)
    if not path:
        raise UsageError(f"{NO_CHROMIUM}, or set MMCONVERT_CHROMIUM to its path")
    return path


def has_chromium() -> bool:
    """Whether ``chromium_path`` finds a Chromium."""
    try:
        chromium_path()
    except UsageError:
        return False
    return True


def browser_name() -> str:
    """Which build draws: "chromium-headless-shell" (a headless shell, Debian's or Chrome's
    ``chrome-headless-shell``) or "chromium" (a whole browser in its headless mode)."""
    return ("chromium-headless-shell" if "headless-shell" in Path(chromium_path()).name
            else "chromium")


@functools.lru_cache(maxsize=1)
def browser_version() -> str:
    """The version Chromium reports (``chromium --version``), without starting a page."""
    import subprocess

    out = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True,
                         check=False, timeout=60).stdout
    found = re.search(r"\d+(\.\d+)+", out)
    return found.group(0) if found else out.strip() or "unknown"


# the browser's system fonts: mmconvert's own font folder, nothing of the machine's (with no
# font at all Chromium draws no text, web fonts included)
_FONTCONFIG = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{fonts}</dir><cachedir>{cache}</cachedir></fontconfig>
"""


class Browser:
    """One headless Chromium for this process, kept open until it exits. Playwright's sync
    API binds a browser to the thread that started it and runs an event loop there, so the
    browser lives on a thread of its own: a caller's thread (or its asyncio loop, or another
    Playwright in the same process) is never touched. Pages are printed one at a time, in
    the order asked."""

    _lock = threading.Lock()
    _shared: Browser | None = None

    def __init__(self):
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            raise UsageError(NO_PLAYWRIGHT) from None
        self._tasks: queue.Queue = queue.Queue()
        # set once Chromium is up, or has failed to start (``_failed`` then says why)
        self._started = threading.Event()
        self._failed: UsageError | None = None
        # the document being drawn: the files it may load, the requests refused
        self._files: dict[str, bytes] = {}
        self._refused: list[str] = []
        # prints asked for ahead, by document and files: where each one's answer comes
        self._ahead: dict[tuple[str, tuple[str, ...]], queue.Queue] = {}
        # layouts asked for ahead, by document, files and width
        self._laid_ahead: dict[tuple[str, tuple[str, ...], float], queue.Queue] = {}
        self._thread = threading.Thread(target=self._serve, args=(chromium_path(),),
                                        name="mmconvert-chromium", daemon=True)
        self._thread.start()  # not waited for: ``ready`` waits

    def ready(self) -> None:
        """Wait until Chromium is up; why it would not start, on one line, if it would not."""
        self._started.wait()
        if self._failed is not None:
            raise self._failed

    def _serve(self, executable: str) -> None:
        """The browser's thread: start Chromium, then draw what is asked until told to
        stop. A drawing that fails (a page that navigated away, a Chromium that died) is
        that item's error; the next one gets a fresh page, in a fresh Chromium when the old
        one is gone."""
        from playwright.sync_api import sync_playwright

        playwright = None
        try:  # whatever stops the start is told to the caller, who waits for it
            self.folder = tempfile.TemporaryDirectory(prefix="mmconvert-chromium-")
            conf = Path(self.folder.name) / "fonts.conf"
            conf.write_text(_FONTCONFIG.format(fonts=html.escape(str(FONT_DIR)),
                                               cache=html.escape(self.folder.name)))
            playwright = sync_playwright().start()
            env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
            browser = self._launch(playwright, executable, env)
            page = self._page(browser)
        except Exception as err:  # noqa: BLE001 - the browser's own reason, on one line
            if playwright is not None:
                playwright.stop()
            if hasattr(self, "folder"):
                self.folder.cleanup()
            self._failed = UsageError(f"Chromium would not start ({first_line(err, 200)})")
            self._started.set()
            return
        self.version = browser.version
        self._started.set()
        while True:
            task = self._tasks.get()
            if task is None:
                break
            work, answer = task
            try:
                if page.is_closed() or page.url != f"{HOST}/blank.html":
                    page = self._page(browser)  # the last document left it unusable
                result = work(page)
                if page.url != f"{HOST}/blank.html":  # the document moved the page
                    raise RuntimeError(f"the document navigated the page to {page.url}")
                answer.put((True, result))
            except Exception as err:  # noqa: BLE001 - handed to the caller's thread
                answer.put((False, err))
                try:  # a fresh page for the next item; a fresh Chromium if this one died
                    if not browser.is_connected():
                        browser = self._launch(playwright, executable, env)
                    else:
                        page.context.close()
                    page = self._page(browser)
                except Exception as again:  # noqa: BLE001 - every later item says why
                    page = _DeadPage(again)
        try:
            browser.close()
            playwright.stop()
        finally:
            self.folder.cleanup()

    @staticmethod
    def _launch(playwright, executable: str, env: dict[str, str]):
        """Chromium with no network: every host name resolves to nothing (an address given
        as numbers too), so no connection can leave it, whatever a document names; and none
        of its own background traffic."""
        return playwright.chromium.launch(
            executable_path=executable, env=env,
            args=["--no-sandbox", "--disable-gpu", "--font-render-hinting=none",
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic",
                  "--no-first-run"])

    def _page(self, browser):
        """A page with JavaScript off, every request going to one handler (the blank page
        every document is written into, the files of the document being drawn, and nothing
        else), at the blank page."""
        page = browser.new_context(java_script_enabled=False).new_page()
        page.route("**/*", self._route)
        page.goto(f"{HOST}/blank.html")
        return page

    @classmethod
    def _forked(cls) -> None:
        """In a forked worker: the parent's browser thread is not here; start afresh."""
        cls._shared = None
        cls._lock = threading.Lock()

    @classmethod
    def get(cls, wait: bool = True) -> Browser:
        """This process's browser, started now if it is not; ``wait``: until it is up (a
        browser that would not start is let go, so that the next call starts another)."""
        with cls._lock:
            if cls._shared is None:
                cls._shared = Browser()
                atexit.register(cls._shared.close)
                # a pool's worker process leaves by os._exit once multiprocessing's own
                # finalizers have run, never through atexit: without this its Chromium
                # outlives it and its temporary folder is left behind
                from multiprocessing import util

                util.Finalize(None, cls._shared.close, exitpriority=10)
            browser = cls._shared
        if wait:
            try:
                browser.ready()
            except UsageError:
                with cls._lock:
                    if cls._shared is browser:
                        cls._shared = None
                raise
        return browser

    def close(self) -> None:
        if self._thread.is_alive():
            self._tasks.put(None)
            self._thread.join(timeout=30)

    def _route(self, route) -> None:
        url = route.request.url
        if url == f"{HOST}/blank.html":
            return route.fulfill(status=200, body=b"<!doctype html><html></html>",
                                 content_type="text/html; charset=utf-8")
        path = url[len(HOST):] if url.startswith(HOST + "/") else None
        if path in self._files:
            return route.fulfill(status=200, body=self._files[path])
        self._refused.append(url)
        if route.request.is_navigation_request():
            # "no content": the page stays where it is (an abort would leave it on an error
            # page, and the next document with it)
            return route.fulfill(status=204, body=b"")
        return route.abort()

    def pdf(self, document: str, files: dict[str, bytes]) -> tuple[bytes, list[str]]:
        """``document`` (an HTML page: its head and body) as a PDF; ``files``: what the page
        may load, by path under HOST. Every other request is refused and named in the list
        returned. A print ``ahead`` asked for is taken, else the page is printed now.

        The document is written into the page the browser keeps (its scripts never run: the
        page's JavaScript is off, and Playwright's own evaluation, which writes it, runs
        apart), so the faces it names are fetched once a process, not once an item; the PDF
        is made once its fonts are loaded and its images decoded."""
        return self._take(self._ahead, (document, tuple(files)),
                          lambda: self._print(document, files))

    def ahead(self, document: str, files: dict[str, bytes]) -> None:
        """Have the browser print ``document`` now, after what it was asked before, for a
        ``pdf`` call with the same document and files to take: the next item is printed in
        Chromium's own process while this one is drawn in ours. At most ``AHEAD`` prints
        wait to be taken; an older one is let go (printed, not used). The pages are the
        same: a print depends on its document alone, whatever was printed before."""
        self._ask(self._ahead, (document, tuple(files)), lambda: self._print(document, files))

    def measure(self, document: str, files: dict[str, bytes], across: float
                ) -> tuple[float, float]:
        """``document`` laid out in the page (not printed), its page area ``across`` points
        wide: the rightmost and lowest edge, in points from the page area's top left, of
        what it draws (each text line's box, each border, background and image). A page
        printed after it is the same: the page area's width is let go again. A layout asked
        for ``ahead`` is taken, else the page is laid out now."""
        return self._take(self._laid_ahead, (document, tuple(files), across),
                          lambda: self._lay_out(document, files, across))

    def lay_out_ahead(self, document: str, files: dict[str, bytes], across: float) -> None:
        """Have the browser lay ``document`` out now, after what it was asked before, for a
        ``measure`` call with the same document, files and width to take (at most ``AHEAD``
        wait; an older one is let go). The edges are the same: a layout depends on its
        document and width alone."""
        self._ask(self._laid_ahead, (document, tuple(files), across),
                  lambda: self._lay_out(document, files, across))

    def _ask(self, asked: dict, key: tuple, queue_work) -> None:
        """Queue a work (``queue_work()``) ahead under ``key`` in ``asked``, unless it is
        there; at most ``AHEAD`` wait, an older one let go (done, not used)."""
        with self._lock:
            if key in asked:
                return
            asked[key] = queue_work()
            while len(asked) > AHEAD:
                del asked[next(iter(asked))]

    def _take(self, asked: dict, key: tuple, queue_work):
        """The answer of the work asked ahead under ``key`` in ``asked``, else of the work
        queued now (``queue_work()``)."""
        with self._lock:
            answer = asked.pop(key, None)
        return self._answer(queue_work() if answer is None else answer)

    def _lay_out(self, document: str, files: dict[str, bytes], across: float) -> queue.Queue:
        """Queue the layout of ``document`` on the browser's thread (``_queued``): its answer
        is the edges, in points."""
        def lay_out(page) -> tuple[float, float]:
            self._files, self._refused = files, []
            right, bottom = page.evaluate(_MEASURE, [document, across])
            return right * 0.75, bottom * 0.75  # CSS pixels to points

        return self._queued(lay_out)

    def _queued(self, work) -> queue.Queue:
        """Queue ``work(page)`` on the browser's thread, after what was asked before: where
        its answer comes, (True, what it returned) or (False, its error)."""
        answer: queue.Queue = queue.Queue()
        self._tasks.put((work, answer))
        return answer

    @staticmethod
    def _answer(answer: queue.Queue):
        """What a queued work returned, once it has run; its error raised here."""
        ok, value = answer.get()
        if not ok:
            raise value
        return value

    def _print(self, document: str, files: dict[str, bytes]) -> queue.Queue:
        """Queue the printing of ``document`` on the browser's thread (``_queued``): its
        answer is (pdf, refused)."""
        def draw(page) -> tuple[bytes, list[str]]:
            self._files, self._refused = files, []
            deepest = page.evaluate("""html => {
                document.documentElement.innerHTML = html;
                let deepest = 0;
                for (const leaf of document.querySelectorAll('body *')) {
                    if (leaf.childElementCount) continue;
                    let depth = 0;
                    for (let e = leaf; e; e = e.parentElement) depth++;
                    deepest = Math.max(deepest, depth);
                }
                const images = [...document.images].map(i => i.decode().catch(() => null));
                return Promise.all([document.fonts.ready, ...images]).then(() => deepest);
            }""", document)
            if deepest >= MAX_DOM_DEPTH:  # the parser stopped nesting: not what was written
                raise DocumentTooDeep(f"the document nests {deepest} elements deep; Chromium "
                                      f"nests at most {MAX_DOM_DEPTH} (it puts deeper ones "
                                      "beside their parents)")
            pdf = page.pdf(prefer_css_page_size=True, print_background=True,
                           display_header_footer=False)
            return pdf, list(self._refused)

        return self._queued(draw)


# the edges of what a document draws, in CSS pixels: each text line's box, each element's box
# that draws a border, a background or an image; the page area as wide as the given points
_MEASURE = """([html, across]) => {
    const root = document.documentElement;
    root.innerHTML = html;
    root.style.width = across + 'pt';
    return Promise.all([document.fonts.ready,
                        ...[...document.images].map(i => i.decode().catch(() => null))])
    .then(() => {
        let right = 0, bottom = 0;
        const grow = r => { if (r.width > 0 && r.height > 0) {
            right = Math.max(right, r.right); bottom = Math.max(bottom, r.bottom); } };
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        const range = document.createRange();
        while (walker.nextNode()) {
            if (!walker.currentNode.textContent.trim()) continue;
            range.selectNodeContents(walker.currentNode);
            for (const r of range.getClientRects()) grow(r);
        }
        for (const e of document.body.querySelectorAll('*')) {
            const s = getComputedStyle(e);
            if (['IMG', 'SVG', 'HR', 'CANVAS', 'VIDEO'].includes(e.tagName.toUpperCase())
                    || s.backgroundColor !== 'rgba(0, 0, 0, 0)' || s.backgroundImage !== 'none'
                    || ['Top', 'Right', 'Bottom', 'Left'].some(
                        side => parseFloat(s['border' + side + 'Width']) > 0
                            && s['border' + side + 'Style'] !== 'none')) {
                grow(e.getBoundingClientRect());
            }
        }
        root.removeAttribute('style');
        return [right, bottom];
    });
}"""


class DocumentTooDeep(ValueError):
    """An item's HTML nested deeper than the browser builds it."""


class _DeadPage:
    """What draws when no fresh page could be had: every drawing fails with the reason."""

    url = ""

    def __init__(self, reason: BaseException):
        self.reason = reason

    def __getattr__(self, name):
        raise RuntimeError(f"Chromium could not be started again ({self.reason})")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=Browser._forked)
