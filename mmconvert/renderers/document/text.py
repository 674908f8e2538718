"""The text a page shows, read from its HTML as the browser lays it out (what the
check compares with and a target counts), and what the HTML names that would be loaded."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any


class _Text(HTMLParser):
    """The text a page shows, in the order the browser draws it: text nodes (not style,
    script, head or a formula's annotation), the numbers of ordered lists and a root's
    radical (a bullet is a shape, not text), and a sum's limits as Chromium draws them, the
    upper one first (``munderover``: over, base, under)."""

    HIDDEN = {"style", "script", "head", "title", "annotation", "annotation-xml"}
    # MathML elements whose children the browser draws in another order than the source's
    DRAWN_ORDER = {"munderover": (2, 0, 1)}

    def __init__(self, unread: frozenset[str] = frozenset()):
        super().__init__(convert_charrefs=True)
        self.HIDDEN = self.HIDDEN | unread
        self.parts: list[str] = []
        self.hidden = 0
        self.lists: list[list[Any]] = []  # [kind, next number]
        self.depth = 0  # element depth inside <math>
        self.frames: list[dict[str, Any]] = []  # the reordered elements open around us

    def emit(self, text: str) -> None:
        if self.frames and self.frames[-1]["segments"]:
            self.frames[-1]["segments"][-1].append(text)
        else:
            self.parts.append(text)

    def handle_starttag(self, tag, attrs):
        if self.depth or tag == "math":
            if self.frames and self.depth == self.frames[-1]["depth"] + 1:
                self.frames[-1]["segments"].append([])  # a new child of the frame
            if tag in self.DRAWN_ORDER:
                self.frames.append({"tag": tag, "depth": self.depth, "segments": []})
            self.depth += 1
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in ("ul", "ol"):
            start = dict(attrs).get("start")
            self.lists.append([tag, int(start) if start and start.isdigit() else 1])
        elif tag == "li" and self.lists and not self.hidden:
            kind = self.lists[-1]
            if kind[0] == "ol":
                self.emit(f"{kind[1]}. ")
                kind[1] += 1
            # a bullet is drawn as a shape, not text: it is not in the text layer
        elif tag in ("br", "p", "div", "tr", "td", "th", "section", "pre"):
            self.emit(" ")
        if tag in ("msqrt", "mroot") and not self.hidden:  # the radical is a glyph
            self.emit("√")

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1
            frame = self.frames[-1] if self.frames else None
            if frame and tag == frame["tag"] and self.depth == frame["depth"]:
                self.frames.pop()
                segments = frame["segments"]
                order = self.DRAWN_ORDER[tag]
                if len(segments) == len(order):
                    segments = [segments[k] for k in order]
                self.emit("".join("".join(part) for part in segments))
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in ("ul", "ol") and self.lists:
            self.lists.pop()

    def handle_data(self, data):
        if not self.hidden:
            self.emit(data)


class _References(HTMLParser):
    """What an HTML fragment would load: scripts, and the src and href of anything but a
    link (a link is shown as text), and CSS url()s; data: URLs are inline, not loaded."""

    LOADS = {"src", "href", "srcset", "data", "poster", "background"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.found.append("script")
        for name, value in attrs:
            if value and tag != "a" and name in self.LOADS and not value.startswith("data:"):
                self.found.append(value)
            if value and name == "style":
                self.found.extend(_css_urls(value))

    def handle_data(self, data):
        if self.lasttag == "style":
            self.found.extend(_css_urls(data))


def _css_urls(css: str) -> list[str]:
    return [url for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", css)
            if not url.startswith("data:")]


def references(body: str) -> list[str]:
    reader = _References()
    reader.feed(body)
    reader.close()
    return list(dict.fromkeys(reader.found))


def visible_text(body: str, unread: frozenset[str] = frozenset()) -> str:
    """The text ``body`` shows, without what the elements named in ``unread`` hold."""
    reader = _Text(unread)
    reader.feed(body)
    reader.close()
    return "".join(reader.parts)
