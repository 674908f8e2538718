"""The font chain: faces loaded when first needed, and run.json's sha256 of every face."""

from __future__ import annotations

import hashlib
import json

import pytest

from mmconvert.renderers.fonts import (
    COVERAGE_FILE,
    FONT_CHAIN,
    PAGE_FONTS,
    PINNED,
    PINNED_SHA256,
    FontChain,
    face_coverage,
    font_bytes,
    font_manifest,
    font_sha256,
    load_font,
    pinned_installed,
)


def test_the_pinned_table_holds_the_faces_own_sha256():
    """Each sha256 the table gives run.json is the sha256 of the face's bytes, as the pinned
    PyMuPDF and pymupdf-fonts carry it."""
    assert pinned_installed(), "the installed PyMuPDF or pymupdf-fonts is not the pinned one"
    specs = {spec.code or spec.script: spec for spec in (*FONT_CHAIN, *PAGE_FONTS.values())
             if spec.code or spec.script}
    assert set(specs) == set(PINNED_SHA256)
    for key, spec in specs.items():
        assert hashlib.sha256(font_bytes(spec, load_font(spec))).hexdigest() == \
            PINNED_SHA256[key], spec.name


def test_a_latin_text_loads_no_other_face_and_its_manifest_names_them_all():
    chain = FontChain()
    for char in "Plain Latin text, 12 words.":
        chain.glyph(char)
    assert chain.fonts.loaded(0) is not None
    assert all(chain.fonts.loaded(i) is None for i in range(1, len(FONT_CHAIN)))
    manifest = font_manifest(chain)
    assert [entry["name"] for entry in manifest] == [spec.name for spec in FONT_CHAIN]
    assert all(chain.fonts.loaded(i) is None for i in range(1, len(FONT_CHAIN)))
    # a character only a later face has loads that face on demand; the pymupdf-fonts faces
    # before it lack it by the coverage table, and stay packed
    index, _ = chain.glyph("中")
    assert FONT_CHAIN[index].name == "Droid Sans Fallback" and chain.fonts.loaded(index)
    assert [FONT_CHAIN[i].name for i in range(len(FONT_CHAIN)) if chain.fonts.loaded(i)] == [
        "Liberation Sans", "Droid Sans Fallback"]
    assert [font_sha256(spec) for spec in FONT_CHAIN] == [e["sha256"] for e in manifest]


@pytest.mark.slow
def test_the_coverage_table_is_each_faces_own_and_the_search_finds_what_loading_finds():
    """``coverage.json`` is MuPDF's own answer for every code point of each pymupdf-fonts
    face of the chain, at the pinned versions; so the first face with a glyph is the one a
    search that loads every face finds."""
    assert pinned_installed(), "the installed PyMuPDF or pymupdf-fonts is not the pinned one"
    data = json.loads(COVERAGE_FILE.read_text(encoding="utf-8"))
    assert (data["pymupdf"], data["pymupdf-fonts"]) == PINNED
    coded = [spec for spec in FONT_CHAIN if spec.code]
    assert sorted(data["faces"]) == sorted(spec.code for spec in coded)
    for spec in coded:
        assert face_coverage(load_font(spec)) == data["faces"][spec.code], spec.name
    fonts = [load_font(spec) for spec in FONT_CHAIN]
    for char in "Aé∑∮⚛✓ᵻ𝔸🜂中ⅷ\u0378":
        chain = FontChain()
        loaded_all = next((i for i, f in enumerate(fonts) if f.has_glyph(ord(char))), None)
        try:
            found = chain.glyph(char)[0]
        except KeyError:
            found = None
        assert found == loaded_all, char


def test_a_bad_font_file_is_refused_when_the_chain_is_made(tmp_path):
    from mmconvert.errors import UsageError
    from mmconvert.renderers.fonts import FontSpec

    bad = tmp_path / "bad.ttf"
    bad.write_bytes(b"not a font")
    with pytest.raises(UsageError, match="bad.ttf: not a font file"):
        FontChain((FontSpec("bad", "the user's font file", path=str(bad)), *FONT_CHAIN))

