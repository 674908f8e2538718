"""Automatic checks of a run folder (``mmconvert qa check``), each appending verdict events.

- ``ocr``: Tesseract reads the image(s) back; the share of the text that should be shown (an
  occlusion's: its visible words) that the reading lacks or got wrong, over the letters and
  digits Tesseract can read, must stay under the threshold calibrated for the renderer and
  language (``thresholds.json``; docs/design/qa.md).
- ``options`` (generated images): the question and every option, letter and text, are found in
  the OCR output (the papers' commonest failure is a missing last option).
- ``text_layer`` (page renders): the PDF's text layer holds exactly the source's characters,
  drawn with real glyphs, none past the margin; a formula the renderer could not typeset
  (the row's ``math_errors``) rejects the item.
- ``image``: every image is there, unchanged (its manifest hash), not blank, and no text touches
  its edge.

Tesseract processes are started from ``jobs`` threads; everything else runs in the calling
thread, in manifest order, and each item's events are appended as soon as it is done, so a
killed check resumes where it stopped.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import UsageError, needs
from ..executors import executor_for
from ..items import option_letter
from ..manifest import MANIFEST
from ..renderers import row_renderer
from ..renderers.base import item_from_row
from ..renderers.layout import is_wide
from ..rows import ImageEntry, QuestionRow, Row
from ..runfolder import open_run, run_file_or_none
from .events import AUTO, UNCERTAIN, QaLog, event
from .ocr import (
    OcrResult,
    cer,
    comparable,
    errors,
    ocr,
    ocr_languages,
    readable,
    tesseract_lang,
    tesseract_version,
)

CHECKS = ("ocr", "options", "text_layer", "image")
# LogicOCR's text-density buckets (words per image)
DENSITY = ((50, "<50"), (100, "50-100"), (150, "100-150"), (200, "150-200"))
DENSE = ">200"
BUCKETS = tuple(name for _, name in DENSITY) + (DENSE,)  # LogicOCR's, in order
# misread characters allowed beyond the rate: one slip would otherwise reject a short item
SLACK = 2
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@lru_cache(maxsize=4)
def load_thresholds(path: str | None = None) -> dict[str, Any]:
    text = (Path(path).read_text(encoding="utf-8") if path else
            resources.files("mmconvert.qa").joinpath("thresholds.json").read_text("utf-8"))
    return json.loads(text)


def max_cer(renderer, language: str, table: dict[str, Any]) -> float:
    """The threshold of ``renderer`` (a class) for ``language``: the table's (calibrated)
    for that language or its default, else the one the renderer declares (``Profile.max_cer``:
    a plugin's own, or ``UNCALIBRATED_CER``), never another renderer's."""
    lang = tesseract_lang(language)
    for per in (table["max_cer"].get(renderer.name) or {}, renderer.profile.max_cer):
        if lang in per or "default" in per:
            return per[lang] if lang in per else per["default"]
    raise AssertionError("Profile.problem() refuses a max_cer without a default")


def word_count(text: str) -> int:
    """Words as LogicOCR counts density: runs of letters or digits; each CJK character is one."""
    count = 0
    for word in _WORD.findall(text):
        wide = sum(is_wide(c) for c in word)
        count += wide + (1 if wide < len(word) else 0)
    return count


def density(words: int) -> str:
    for limit, name in DENSITY:
        if words < limit:
            return name
    return DENSE


def expected_text(row: Row) -> str:
    """The text the item's images should show (its renderer says what that is)."""
    return row_renderer(row).expected_text(row)


def ocr_images(row: Row) -> list[ImageEntry]:
    """The images whose text is read back (its ``profile.ocr``)."""
    return row.images_in(row_renderer(row).profile.ocr)


def ocr_scale(image: ImageEntry) -> int:
    """How much to enlarge an image before OCR: pages to about 300 pixels per inch; others
    (occlusions' 20-pixel type, generated images) twice."""
    ppi = image.ppi
    return max(1, min(4, round(300 / ppi))) if ppi else 2


@dataclass
class Result:
    check: str
    verdict: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reading:
    """An item's images as Tesseract read them, and the OCR check's figures for that reading."""

    results: list[OcrResult]
    measure: dict[str, Any]
    languages: str  # the Tesseract languages it was read with


@dataclass
class CheckReport:
    checked: int = 0
    skipped: int = 0  # already checked
    appended: int = 0
    flagged: dict[str, int] = field(default_factory=dict)
    ocr_seconds: list[float] = field(default_factory=list)  # one per image read


class Checker:
    """Runs the chosen checks over a run folder's manifest and appends their events."""

    def __init__(self, run: Path, *, checks: tuple[str, ...] = CHECKS, jobs: int = 2,
                 max_cer: float | None = None, thresholds: str | None = None,
                 recheck: bool = False):
        unknown = sorted(set(checks) - set(CHECKS))
        if unknown:
            raise UsageError(f"unknown check(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(CHECKS)}")
        self.run, self.checks, self.jobs = run, checks, max(1, jobs)
        self.max_cer, self.recheck = max_cer, recheck
        self.table = load_thresholds(thresholds)
        self.rows = open_run(run).rows()
        self.qa = QaLog(run)
        self.qa.refresh()
        self._renderers: dict[str, Any] = {}  # renderers by their recorded name and options
        try:
            import rapidfuzz  # noqa: F401
        except ImportError:
            raise UsageError(needs("qa check", "rapidfuzz", "qa")) from None
        if "ocr" in checks or "options" in checks:
            tesseract_version()  # fails now, with the install hint, if it is missing

    def todo(self, row: Row) -> tuple[str, ...]:
        applies = row_renderer(row, f"{self.run / MANIFEST}: item {row.id}").profile.checks
        wanted = tuple(c for c in self.checks if c in applies)
        if self.recheck:
            return wanted
        done = self.qa.status(row.id).auto
        return tuple(c for c in wanted if c not in done)

    def run_all(self, progress: Callable[[int], None] = lambda n: None) -> CheckReport:
        """Every row's checks, in manifest order; Tesseract runs in ``jobs`` threads through
        the executor seam, and each row's events are appended as soon as it is done."""
        report = CheckReport()
        work = []
        for row in self.rows:
            todo = self.todo(row)
            if todo:
                work.append((row, todo))
            else:
                report.skipped += 1
                progress(1)
        executor = executor_for(1, len(work), threads=self.jobs)
        readings = executor.map(functools.partial(_reader, self), work)
        for (row, todo), reading in zip(work, readings, strict=True):
            self.finish(row, todo, reading, report)
            progress(1)
        return report

    def __getstate__(self):
        """What a worker elsewhere (a Ray actor) needs to read images back: not the rows
        and not the QA log, which stay with the one process that appends to it."""
        state = dict(self.__dict__)
        state.update(rows=[], qa=None, _renderers={})
        return state

    def file(self, rel: str) -> bytes | None:
        """The bytes of a file a row names (a file of the run, or a shard's copy), or None
        when it is missing or outside the run."""
        return run_file_or_none(self.run, rel)

    def _reading(self, task) -> Reading | str | None:
        row, todo = task
        return self.read_back(row) if {"ocr", "options"} & set(todo) else None

    def read_back(self, row: Row) -> Reading | str:
        """OCR of the row's images (in a worker thread), or why it could not be done.

        A reading that would fail the OCR check is followed by a second one in Tesseract's
        sparse-text mode (``--psm 11``), and the better of the two is kept: the block mode
        now and then drops a whole line of a perfect page (measured in docs/design/qa.md)."""
        renderer, language = row_renderer(row), row.language or "en"
        images = ocr_images(row)
        found = [self.file(image.path) for image in images]
        for image, got in zip(images, found, strict=True):
            if got is None:
                return f"{image.path} is missing"
        data = [got for got in found if got is not None]

        # the item's language, and one for each other script among the letters to be read
        langs = ocr_languages(language, renderer.ocr_text(row))

        def read(psm: int) -> Reading:
            results = [ocr(got, langs, psm=psm, scale=ocr_scale(image))
                       for image, got in zip(images, data, strict=True)]
            return Reading(results, self.measure(row, results), langs)

        first = read(renderer.profile.ocr_psm)
        if first.measure["errors"] <= first.measure["allowed"]:
            return first
        second = read(11)
        return second if second.measure["errors"] < first.measure["errors"] else first

    def measure(self, row: Row, read: list[OcrResult]) -> dict[str, Any]:
        """The OCR check's figures for one reading of the row's images."""
        renderer, language = row_renderer(row), row.language or "en"
        limit = self.max_cer if self.max_cer is not None else max_cer(renderer, language,
                                                                        self.table)
        source = renderer.ocr_text(row)
        reference = readable(source, language)
        hypothesis = "\n".join(r.text for r in read)
        # what the source has and the reading lacks or got wrong; insertions are free: covered
        # words come back as fragments, and a symbol Tesseract cannot read comes back as a
        # letter ("∧" as "A")
        wrong = errors(reference, readable(hypothesis, language), free_insertions=True)
        return {"source": source, "hypothesis": hypothesis, "errors": wrong,
                "chars": len(reference), "max": limit,
                "allowed": limit * len(reference) + SLACK}

    def finish(self, row: Row, todo: tuple[str, ...], read: Reading | str | None,
               report: CheckReport) -> None:
        results = []
        for check in todo:
            results.append(getattr(self, f"check_{check}")(row, read))
        report.checked += 1
        if isinstance(read, Reading):
            report.ocr_seconds += [r.seconds for r in read.results]
        for result in results:
            if result.verdict == "reject":
                report.flagged[result.check] = report.flagged.get(result.check, 0) + 1
        report.appended += self.record(row.id, results)

    def record(self, item_id: str, results: list[Result]) -> int:
        """Append the results that differ from the latest event of their check."""
        latest = self.qa.status(item_id).auto
        new = []
        for r in results:
            old = latest.get(r.check)
            if old and (old["verdict"], old["reason"], steady(old["detail"])) == (
                    r.verdict, r.reason, steady(r.detail)):
                continue
            new.append(event(item_id, AUTO + r.check, r.verdict, r.reason, r.detail))
        self.qa.append(*new)
        return len(new)

    # -- the checks: each returns one Result

    def check_ocr(self, row: Row, reading: Reading | str | None) -> Result:
        if not isinstance(reading, Reading) or not reading.results:
            return Result("ocr", "reject", "missing_image", {"error": reading or "no image"})
        renderer = row_renderer(row)
        read, m = reading.results, reading.measure
        source, wrong, chars = m["source"], m["errors"], m["chars"]
        detail = {"cer": round(wrong / chars if chars else 0.0, 4), "errors": wrong,
                  "chars": chars, "max": m["max"], "slack": SLACK,
                  "engine": f"{tesseract_version()} {reading.languages}",
                  "psm": read[0].psm, "scale": read[0].scale,
                  "words": word_count(source), "density": density(word_count(source)),
                  "words_read": sum(len(r.words) for r in read),
                  "seconds": round(sum(r.seconds for r in read), 3)}
        if source == renderer.expected_text(row):  # nothing covered: every character counts
            detail["cer_all_characters"] = round(cer(source, m["hypothesis"]), 4)
        if wrong > m["allowed"]:
            return Result("ocr", "reject", "ocr_mismatch", detail)
        return Result("ocr", "accept", "ok", detail)

    def check_options(self, row: Row, reading: Reading | str | None) -> Result:
        if not isinstance(reading, Reading) or not reading.results:
            return Result("options", "reject", "missing_image",
                          {"error": reading or "no image"})
        found = find_parts(row, reading.measure["hypothesis"])
        missing = [name for name, ok in found.items() if not ok]
        detail: dict[str, Any] = {"found": found}
        if missing:
            detail["missing"] = missing
            reason = "missing_question" if missing == ["question"] else "missing_option"
            return Result("options", "reject", reason, detail)
        return Result("options", "accept", "ok", detail)

    def renderer(self, row: Row):
        """The renderer that drew ``row``, one per name and options (a page renderer's line
        breaker caches glyph advances)."""
        cls = row_renderer(row)
        options = cls.options_from(row.params)
        key = f"{cls.name} {options.model_dump_json()}"
        if key not in self._renderers:
            self._renderers[key] = cls.from_params(row.params)
        return self._renderers[key]

    def check_text_layer(self, row: Row, reading: Any = None) -> Result:
        from .textlayer import check_pdf

        params = row.params
        renderer = self.renderer(row)
        part = params.get("render") or "options"
        stored = getattr(row, "pdf", None)
        detail: dict[str, Any] = {}
        pdf = self.file(stored) if stored else None
        if pdf is not None:
            detail["pdf"] = "stored"
        else:
            # the row is a recipe: lay the page out again, and check it is the same picture
            render = renderer.render(item_from_row(row), part, want_pdf=True)
            pdf = render.pdf
            detail["pdf"] = "re-rendered"
            same = [hashlib.sha256(p.png).hexdigest() for p in render.pages] == [
                i.sha256 for i in row.images]
            detail["recipe_matches_images"] = same
        # the text with its option labels ("A. "), as the page draws it
        result = check_pdf(pdf, expected_text(row), renderer.insets())
        detail["chars"] = result.expected
        # formulas the renderer could not typeset are drawn as their source, which the text
        # layer then holds as expected: the row's record of them rejects the item
        untypeset = getattr(row, "math_errors", None) or []
        if untypeset:
            detail["math_errors"] = untypeset
            return Result("text_layer", "reject", "math_untypeset", detail)
        if result.ok:
            return Result("text_layer", "accept", "ok", detail)
        detail["problem"] = result.summary()
        if result.outside and not (result.missing or result.extra or result.tofu):
            reason = "overflow"
        else:
            reason = "tofu" if result.tofu else "text_layer_mismatch"
        return Result("text_layer", "reject", reason, detail)

    def check_image(self, row: Row, reading: Reading | str | None = None) -> Result:
        from PIL import Image, UnidentifiedImageError

        renderer = row_renderer(row)
        images = row.images
        if not images:
            return Result("image", "reject", "missing_image", {"error": "no image in the row"})
        detail: dict[str, Any] = {}
        problems: list[tuple[str, str]] = []
        for image in images:
            data = self.file(image.path)
            if data is None:
                problems.append(("missing_image", f"{image.path} is missing"))
                continue
            if hashlib.sha256(data).hexdigest() != image.sha256:
                problems.append(("image_changed", f"{image.path} differs from its "
                                                  "manifest hash"))
            try:
                with Image.open(io.BytesIO(data)) as opened:
                    gray = opened.convert("L")
            except (UnidentifiedImageError, OSError) as err:
                problems.append(("missing_image", f"{image.path}: {err}"))
                continue
            ink = ink_stats(gray)
            detail[image.path] = ink
            if ink["ink"] < 1e-4:
                problems.append(("blank", f"{image.path} is blank"))
            # paper-backed images: ink in the outermost pixels is text touching the edge
            # (VCR captions start flush at the left edge, as in the VCR code)
            edge = [side for side in ink["edge"] if side not in renderer.profile.flush_edges]
            if image.role in renderer.profile.paper and edge:
                problems.append(("text_at_edge", f"{image.path}: ink at the "
                                                 f"{'/'.join(edge)} edge"))
        if renderer.profile.ocr_edge_words and isinstance(reading, Reading):
            for image, result in zip(ocr_images(row), reading.results, strict=False):
                sides = words_at_edge(result, image.width, image.height)
                if sides:
                    problems.append(("words_at_edge", f"{image.path}: words at the "
                                                      f"{'/'.join(sides)} edge"))
        if problems:
            detail["problems"] = [p[1] for p in problems]
            # the reason is a certain problem's when there is one (an OCR word at the edge
            # only marks the item for review)
            certain = [p[0] for p in problems if p[0] not in UNCERTAIN]
            return Result("image", "reject", (certain or [problems[0][0]])[0], detail)
        return Result("image", "accept", "ok", detail)


def steady(detail: dict[str, Any]) -> dict[str, Any]:
    """A result's detail without its timings, which differ on every run."""
    return {k: v for k, v in detail.items() if k != "seconds"}


def ink_stats(gray, *, contrast: int = 64, border: int = 1) -> dict[str, Any]:
    """Share of pixels that differ from the commonest value (the background) by more than
    ``contrast``, and the sides whose outermost ``border`` pixels hold any of them."""
    histogram = gray.histogram()
    background = max(range(256), key=histogram.__getitem__)
    lut = [255 if abs(v - background) > contrast else 0 for v in range(256)]
    mask = gray.point(lut)
    total = gray.width * gray.height
    ink = mask.histogram()[255] / total if total else 0.0
    w, h = mask.size
    strips = {"top": (0, 0, w, border), "bottom": (0, h - border, w, h),
              "left": (0, 0, border, h), "right": (w - border, 0, w, h)}
    edge = [side for side, box in strips.items() if mask.crop(box).getbbox()]
    return {"ink": round(ink, 5), "background": background, "edge": edge}


def words_at_edge(result: OcrResult, width: int, height: int, *, min_conf: float = 60,
                  margin: int = 2) -> list[str]:
    """Sides that a confidently read word touches (a generated image cut through its text)."""
    sides = set()
    for w in result.words:
        if w.conf < min_conf or len(w.text.strip()) < 2:
            continue
        if w.left <= margin:
            sides.add("left")
        if w.top <= margin:
            sides.add("top")
        if w.left + w.width >= width - margin:
            sides.add("right")
        if w.top + w.height >= height - margin:
            sides.add("bottom")
    return sorted(sides)


def _key(text: str) -> str:
    """Letters and digits only, lower case: OCR punctuation and spacing vary too much."""
    return "".join(_WORD.findall(comparable(text).lower()))


def find_parts(row: Row, hypothesis: str, *, tolerance: float = 0.1
               ) -> dict[str, bool]:
    """Whether the question and each option (its letter and text) appear in ``hypothesis``:
    some stretch of it must be within ``tolerance`` x length edits (rounded down) of the
    needle, so needles under ten letters and digits must appear exactly."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import Levenshtein

    haystack = _key(hypothesis)
    needles = {}
    if not isinstance(row, QuestionRow):
        return {}
    if row.question:
        needles["question"] = _key(row.question)
    for i, option in enumerate(row.options):
        needles[option_letter(i)] = _key(f"{option_letter(i)} {option}")
    found = {}
    for name, needle in needles.items():
        allowed = int(tolerance * len(needle))
        if needle in haystack or not allowed:
            found[name] = needle in haystack
            continue
        # the best-aligned stretch, widened by the edits allowed, then counted exactly
        where = fuzz.partial_ratio_alignment(needle, haystack)
        if where is None:  # rapidfuzz gives none only for an empty needle or haystack
            found[name] = False
            continue
        start = max(0, where.dest_start - allowed)
        window = haystack[start:where.dest_end + allowed]
        best = min(Levenshtein.distance(needle, window[a:b])
                   for a in range(0, 2 * allowed + 1)
                   for b in range(max(a + 1, len(window) - 2 * allowed), len(window) + 1))
        found[name] = best <= allowed
    return found


def ocr_statistics(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {"mean": round(statistics.fmean(ordered), 4),
            "median": round(statistics.median(ordered), 4),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 4),
            "max": round(ordered[-1], 4)}


def _reader(checker: Checker):
    """The reading worker of ``checker`` (a module-level function: picklable)."""
    return checker._reading
