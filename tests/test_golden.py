"""Golden sha256 values: the bytes every registered renderer and transform makes on fixed
inputs and options, kept in one table (``golden.json``) keyed by kind and registry name.

A relative check (run A equals run B) cannot see a change that every run makes alike, such as
text drawn in grey; these can. When an output changes on purpose, rewrite the table with

    MMCONVERT_UPDATE_GOLDEN=1 pytest tests/test_golden.py

and say why in the commit message.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest

from mmconvert.items import Item
from tests.conftest import FIXTURES

TABLE = Path(__file__).parent / "golden.json"
UPDATE = os.environ.get("MMCONVERT_UPDATE_GOLDEN") == "1"

MCQ = Item(id="golden-000", corpus="golden", subset="golden", split="test",
           question="Which of these is a prime number?",
           options=["4 + 4 = 8, an even number", "∑ₖ k² for k ≤ 3 (= 14)",
                    "13, which has no divisors but 1 and itself",
                    "A very long token: " + "antidisestablishmentarianism" * 5],
           answer="C")
CONTEXT = Item(id="golden-001", corpus="golden", subset="golden", split="test", language="en",
               question="What colour was the lantern?",
               context="\n\n".join(
                   f"Paragraph {n}. The lantern by the harbour was painted red, and the river "
                   "stone beside it\tkept the archive's signal copper bright. " * 6
                   + "混合的中文文本也在这里。" for n in range(12)))
# shaped scripts: Arabic with numbers and English, Hebrew, Devanagari, Bengali, Tamil, Thai
# without spaces, emoji sequences; options of an Arabic question (right-aligned lines)
SCRIPTS = Item(id="golden-002", corpus="golden", subset="golden", split="test",
               question="ما هي عاصمة مصر؟",
               options=["القاهرة، وعدد سكانها 22 مليون نسمة (Cairo)",
                        "בירת ישראל היא ירושלים, 2024",
                        "भारत की राजधानी नई दिल्ली है। क्षत्रिय कृपया",
                        "বাংলাদেশের রাজধানী ঢাকা। தமிழ்நாட்டின் தலைநகரம் சென்னை கொ",
                        "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทยและเป็นเมืองที่มีประชากรมากที่สุด",
                        "Family 👨‍👩‍👧, flag 🇫🇷, keycap 1️⃣, heart ❤️"],
               answer="A")


def page_outputs() -> dict[str, bytes]:
    from mmconvert.renderers.page import PageOptions, PageRenderer

    out: dict[str, bytes] = {}
    for label, options in (("92.9", PageOptions()), ("300-rgb", PageOptions(ppi=300,
                                                                            color="rgb"))):
        renderer = PageRenderer(options)
        for item, part in ((MCQ, "options"), (CONTEXT, "context"), (SCRIPTS, "options")):
            result = renderer.render(item, part, want_pdf=label == "92.9")
            for number, page in enumerate(result.pages, start=1):
                out[f"{label}/{item.id}/p{number:03d}.png"] = page.png
            if result.pdf is not None:  # the vector PDF (the same at any PPI)
                out[f"pdf/{item.id}.pdf"] = result.pdf
            out[f"{label}/{item.id}/layout.json"] = json.dumps(
                result.layout, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return out


def style_outputs(name: str) -> dict[str, bytes]:
    """The three items in a shipped style (its per-item draws at run seed 0), with PDFs."""
    from mmconvert.renderers.page import PageJob, RenderConfig

    job = PageJob(RenderConfig(corpus="golden", style=name))
    out: dict[str, bytes] = {}
    for item, part in ((MCQ, "options"), (CONTEXT, "context"), (SCRIPTS, "options")):
        result = job.renderer_for(item).render(item, part, want_pdf=True)
        for number, page in enumerate(result.pages, start=1):
            out[f"{item.id}/p{number:03d}.png"] = page.png
        out[f"{item.id}.pdf"] = result.pdf
    return out


# style fields the presets leave alone, each on the context and the right-to-left options
STYLE_FIELD_CASES = {
    "justify": {"align": "justify", "first_line_indent": 18},
    "center": {"align": "center"},
    "right": {"align": "right", "right_indent": 36, "left_indent": 12},
    "spaced-squeezed": {"letter_spacing": 0.8, "horizontal_scale": 0.8},
    "margins-colours": {"margin_top": 0.1, "margin_left": 0.6, "margin_right": 0.3,
                        "color": "rgb", "text_color": "#202060", "background": "#f5f0e0"},
    "reflow-gap": {"newlines": "reflow", "paragraph_gap": 1},
    "marker": {"newlines": "marker", "newline_marker": " ⏎ "},
    "two-columns": {"columns": 2, "align": "justify", "font_size": 9},
    "marker-paragraph-colours": {"newlines": "marker", "color": "rgb",
                                 "newline_marker_color": "#c00000",
                                 "paragraph_color": "#eef3f8"},
}


def style_field_outputs() -> dict[str, bytes]:
    from mmconvert.renderers.page import PageOptions, PageRenderer

    out: dict[str, bytes] = {}
    for label, values in STYLE_FIELD_CASES.items():
        renderer = PageRenderer(PageOptions(**values))
        for item, part in ((CONTEXT, "context"), (SCRIPTS, "options")):
            result = renderer.render(item, part, want_pdf=True)
            out[f"{label}/{item.id}/p001.png"] = result.pages[0].png
            out[f"{label}/{item.id}.pdf"] = result.pdf
    return out


DOCUMENT = Item(id="golden-003", corpus="golden", subset="golden", split="test",
                question="Which row is best?", answer="A", context=(
                    "## A table\n\n| model | score |\n|:--|--:|\n| a | 71.2 |\n| b | 6.0 |\n\n"
                    "```python\ndef f(x):\n    return x ** 2\n```\n\n"
                    "Math $\\frac{1}{n}\\sum_i x_i^2$, a [link](https://example.com), "
                    "> a quote\n\n1. one\n2. two"),
                options=["`a`", "*b*"])


def document_outputs() -> dict[str, bytes]:
    """The document renderer's PDF and pages, labelled by the Chromium that drew them: its
    bytes are that browser's (``chromium_build`` below names the one pinned)."""
    from mmconvert.renderers.document import DocumentOptions, DocumentRenderer

    out: dict[str, bytes] = {}
    for label, options in (("92.9", DocumentOptions()),
                           ("150-rgb-2col", DocumentOptions(ppi=150, color="rgb", columns=2)),
                           # the page style fields the document shares, set off their defaults
                           ("styled", DocumentOptions(
                               font_size=10, line_pitch=13, letter_spacing=0.3,
                               first_line_indent=12, left_indent=6, right_indent=20,
                               paragraph_gap=1, paragraph_color="#eeeeee", crop="content"))):
        drawn = DocumentRenderer(options).pages(DOCUMENT, "all")
        out[f"{label}/{DOCUMENT.id}.pdf"] = drawn.pdf
        for number, (png, _, _) in enumerate(drawn.pages, start=1):
            out[f"{label}/{DOCUMENT.id}/p{number:03d}.png"] = png
    return out


def occlude_outputs() -> dict[str, bytes]:
    from mmconvert.corpora import LoadReport, LoadRequest, resolve
    from mmconvert.renderers.occlude import CaptionOccluder, OccludeOptions

    items = resolve("captions").load(LoadRequest(source=FIXTURES / "coco"), LoadReport())
    out: dict[str, bytes] = {}
    for label, options in (("hard", OccludeOptions(difficulty="hard", ner=False)),
                           ("hidden", OccludeOptions(style="hidden", ner=False))):
        occluder = CaptionOccluder(options)
        for item in items:
            result = occluder.render(item, seed=0)
            out[f"{label}/{item.id}/stacked.png"] = result.stacked
            out[f"{label}/{item.id}/text_only.png"] = result.text_only
    return out


def generate_outputs() -> dict[str, bytes]:
    """The benchmark copy the image-API renderer makes of a returned image (the drawing
    itself is the model's)."""
    from PIL import Image, ImageDraw

    from mmconvert.renderers.generate import benchmark_copy

    image = Image.new("RGBA", (1536, 1024), (240, 230, 200, 255))
    draw = ImageDraw.Draw(image)
    for n in range(12):
        draw.rectangle((40 + n * 100, 60, 100 + n * 100, 960), fill=(20 * n, 80, 160, 200))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    jpeg, *_ = benchmark_copy(buffer.getvalue(), 1024, 95)
    return {"1536x1024-rgba.jpg": jpeg}


def base_page() -> bytes:
    from mmconvert.renderers.page import PageRenderer

    return PageRenderer().render(MCQ, "options").pages[0].png


# each registered transform: (label, the step as --apply writes it, input mode, input PPI)
TRANSFORM_CASES = {
    "scale": [("0.5-lanczos.png", "scale:factor=0.5,resample=lanczos", "L", 92.9),
              ("2-bicubic.png", "scale:factor=2,resample=bicubic", "L", 92.9),
              ("0.25-nearest.png", "scale:factor=0.25,resample=nearest", "L", 92.9)],
    "rotate": [(f"{d}.png", f"rotate:{d}", "L", 92.9) for d in (90, 180, 270, 30)],
    "jpeg": [("q95-4:2:0.jpg", "jpeg:quality=95,subsampling=4:2:0", "RGB", None),
             ("q75-4:4:4.jpg", "jpeg:quality=75,subsampling=4:4:4", "RGB", None),
             ("q75-gray.jpg", "jpeg:75", "L", 92.9)],
    "blur": [("1.5.png", "blur:1.5", "L", 92.9), ("0.6-rgb.png", "blur:0.6", "RGB", 92.9)],
    "noise": [("gaussian-8.png", "noise:8", "L", 92.9),
              ("salt-pepper-0.05-rgb.png", "noise:level=0.05,kind=salt-pepper", "RGB", 92.9)],
    "augraphy": [(f"{p}.png", f"augraphy:{p}", "L", 92.9) for p in ("ink", "paper",
                                                                    "scanner", "fax")],
}


def transform_outputs(name: str) -> dict[str, bytes]:
    """Each case through the path sweeps and ``mmconvert transform`` take (``apply_steps``),
    seeded as the first step of item golden-000's first image at run seed 0."""
    from mmconvert.imaging import decode
    from mmconvert.postprocess.apply import apply_steps
    from mmconvert.postprocess.transforms import parse_step

    out = {}
    for label, spec, mode, ppi in TRANSFORM_CASES[name]:
        image = decode(base_page())
        image = image if mode == "L" else image.convert(mode)
        data, *_ = apply_steps(image, {"path": "p.png", "ppi": ppi}, [parse_step(spec)],
                               seed=0, item_id=MCQ.id, index=0)
        out[label] = data
    return out


def sample_run_outputs(out: Path) -> dict[str, bytes]:
    """The README's demo (the session's ``sample_run``, made by its command): every file of
    the run but run.json (versions, paths, timings)."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "run.json"}


PRODUCERS = {
    "renderer:page": lambda request: page_outputs(),
    "renderer:occlude": lambda request: occlude_outputs(),
    "renderer:generate": lambda request: generate_outputs(),
    "renderer:document": lambda request: document_outputs(),
    **{f"transform:{name}": (lambda request, name=name: transform_outputs(name))
       for name in TRANSFORM_CASES},
    "run:render-sample": lambda request: sample_run_outputs(
        request.getfixturevalue("sample_run")),
    **{f"style:{name}": (lambda request, name=name: style_outputs(name))
       for name in ("readbench", "glyph", "pixelworld", "vtcbench", "wild")},
    "style:fields": lambda request: style_field_outputs(),
}


def hashes(outputs: dict[str, bytes]) -> dict[str, str]:
    return {label: hashlib.sha256(data).hexdigest() for label, data in sorted(outputs.items())}


def read_table() -> dict[str, dict[str, str]]:
    return json.loads(TABLE.read_text(encoding="utf-8")) if TABLE.exists() else {}


def chromium_build() -> dict[str, str] | None:
    """The Chromium build that draws documents here, and its version."""
    from mmconvert.errors import UsageError
    from mmconvert.renderers.document.browser import browser_name, browser_version

    try:
        return {"name": browser_name(), "version": browser_version()}
    except UsageError:
        return None


# what a document's pages must keep under a Chromium other than the pinned one, whose bytes
# may differ: the reference pages and their text layers, written with the hashes
DOCUMENT_REFERENCE = Path(__file__).parent / "golden-document"
# the pixels' bound, on 4 x 4 cells (their mean gray) where either page has ink: at most 30 %
# of them more than 32 gray levels apart. Measured on these pages: the whole page moved by half
# a pixel (the scale of a glyph placed a subpixel elsewhere) gives at most 20 %; the type set
# 0.2 pt smaller (a layout that moved) at least 52 %.
DOCUMENT_CELL = 4
DOCUMENT_FAR_SHARE = 0.30


def page_texts(pdf: bytes) -> list[str]:
    import pymupdf

    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [page.get_text() for page in doc]


def write_document_reference(outputs: dict[str, bytes]) -> None:
    DOCUMENT_REFERENCE.mkdir(exist_ok=True)
    for old in DOCUMENT_REFERENCE.iterdir():
        old.unlink()
    for label, data in sorted(outputs.items()):
        name = label.replace("/", "_")
        if label.endswith(".pdf"):
            (DOCUMENT_REFERENCE / f"{name}.text.json").write_text(
                json.dumps(page_texts(data), ensure_ascii=False, indent=1) + "\n",
                encoding="utf-8")
        else:
            (DOCUMENT_REFERENCE / name).write_bytes(data)


def check_document_pages(outputs: dict[str, bytes]) -> None:
    """Under another Chromium: the same PDFs' text layers, the same pages (count and pixel
    sizes), and every page within the pixel bound of the reference's."""
    import numpy as np
    from PIL import Image

    pages = sorted(label for label in outputs if label.endswith(".png"))
    reference = sorted(p.name for p in DOCUMENT_REFERENCE.glob("*.png"))
    assert [label.replace("/", "_") for label in pages] == reference, (pages, reference)
    for label, data in sorted(outputs.items()):
        name = label.replace("/", "_")
        if label.endswith(".pdf"):
            want = json.loads((DOCUMENT_REFERENCE / f"{name}.text.json").read_text("utf-8"))
            # every character, in order; not the spaces PyMuPDF infers from the gaps between
            # glyphs, which a glyph placed a subpixel elsewhere moves (the whole browser's
            # "2 ," where its headless shell's text reads "2,")
            assert [ink(text) for text in page_texts(data)] == [ink(text) for text in want], \
                f"{label}: the text layer differs"
            continue
        got = np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=float)
        ref = np.asarray(Image.open(DOCUMENT_REFERENCE / name).convert("L"), dtype=float)
        assert got.shape == ref.shape, f"{label}: {got.shape} pixels, not {ref.shape}"
        far = far_cells(got, ref)
        assert far <= DOCUMENT_FAR_SHARE, (
            f"{label}: {100 * far:.1f} % of the inked {DOCUMENT_CELL} x {DOCUMENT_CELL} cells "
            f"more than 32 gray levels apart (bound {100 * DOCUMENT_FAR_SHARE:g} %)")


def ink(text: str) -> str:
    """A text layer's characters without its white space."""
    return "".join(text.split())


def far_cells(got, ref) -> float:
    """The share of ``DOCUMENT_CELL``-square cells with ink in either page whose mean gray
    differs by more than 32."""
    cell = DOCUMENT_CELL
    h, w = (got.shape[0] // cell) * cell, (got.shape[1] // cell) * cell

    def cells(a):
        return a[:h, :w].reshape(h // cell, cell, w // cell, cell).mean(axis=(1, 3))

    a, b = cells(got), cells(ref)
    ink = (a < 224) | (b < 224)
    return float(((abs(a - b) > 32) & ink).sum() / max(1, ink.sum()))


@pytest.mark.parametrize("key", sorted(PRODUCERS))
def test_outputs_match_their_golden_hashes(key, request):
    outputs = PRODUCERS[key](request)
    got = hashes(outputs)
    if key == "renderer:document":
        # the document's bytes are the browser's: pinned for the Chromium that made them;
        # another Chromium is held to what must hold anyway
        build = chromium_build()
        pinned = read_table().get("renderer:document:chromium")
        if UPDATE:
            table = read_table()
            table["renderer:document:chromium"] = build
            TABLE.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n",
                             encoding="utf-8")
            write_document_reference(outputs)
        elif build != pinned and got != read_table().get(key):
            check_document_pages(outputs)
            return
    if UPDATE:
        table = read_table()
        table[key] = got
        TABLE.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n",
                         encoding="utf-8")
        return
    want = read_table().get(key)
    assert want is not None, f"{key} has no golden hashes: MMCONVERT_UPDATE_GOLDEN=1"
    changed = sorted(label for label in set(want) | set(got) if want.get(label) != got.get(label))
    assert not changed, f"{key}: these outputs changed: {', '.join(changed)}"


def test_every_registered_part_has_golden_hashes():
    from mmconvert.postprocess.transforms import TRANSFORMS
    from mmconvert.renderers import RENDERERS

    table = read_table()
    keys = [f"renderer:{name}" for name in RENDERERS.built_in()] + [  # not a plugin's
        f"transform:{name}" for name in TRANSFORMS.built_in()]
    missing = [key for key in keys if key not in table or key not in PRODUCERS]
    assert not missing, f"no golden hashes for {', '.join(missing)}"


def test_every_shipped_style_has_golden_hashes_and_readbench_is_the_default_look():
    from mmconvert.renderers.style_files import presets

    table = read_table()
    missing = [name for name in presets() if f"style:{name}" not in table]
    assert not missing, f"no golden hashes for the styles {', '.join(missing)}"
    # the readbench preset draws today's pages byte for byte: its PNGs are the default's
    default = {k.split("/", 1)[1]: v for k, v in table["renderer:page"].items()
               if k.startswith("92.9/") and k.endswith(".png")}
    readbench = {k: v for k, v in table["style:readbench"].items() if k.endswith(".png")}
    assert readbench and readbench == default


def test_another_chromium_is_held_to_the_text_layer_the_pages_and_the_pixel_bound():
    """What the document golden test checks under a Chromium other than the pinned one: the
    reference passes; the pages moved by half a pixel (glyphs placed a subpixel elsewhere)
    pass; pages laid out otherwise (a point smaller) and a text layer that lost a word fail."""
    import pymupdf

    from mmconvert.renderers.document import DocumentOptions, DocumentRenderer

    outputs = document_outputs()
    check_document_pages(outputs)
    pdf = outputs["92.9/golden-003.pdf"]
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        scale = 92.9 / 72
        matrix = pymupdf.Matrix(scale, scale).pretranslate(0.5 / scale, 0.5 / scale)
        moved = doc[0].get_pixmap(matrix=matrix, alpha=False, colorspace=pymupdf.csGRAY)
    from PIL import Image

    size = Image.open(io.BytesIO(outputs["92.9/golden-003/p001.png"])).size
    png = io.BytesIO()
    Image.open(io.BytesIO(moved.tobytes("png"))).crop((0, 0, *size)).save(png, "PNG")
    check_document_pages({**outputs, "92.9/golden-003/p001.png": png.getvalue()})
    smaller = DocumentRenderer(DocumentOptions(font_size=11)).pages(DOCUMENT, "all")
    with pytest.raises(AssertionError, match="cells more than 32 gray levels apart"):
        check_document_pages({**outputs, "92.9/golden-003/p001.png": smaller.pages[0][0]})
    with pytest.raises(AssertionError, match="the text layer differs"):
        check_document_pages({**outputs, "92.9/golden-003.pdf": _without_a_word(pdf)})


def _without_a_word(pdf: bytes) -> bytes:
    """The PDF with its first word of text redacted away."""
    import pymupdf

    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        page = doc[0]
        word = page.get_text("words")[0]
        page.add_redact_annot(pymupdf.Rect(word[:4]))
        page.apply_redactions()
        return doc.tobytes()
