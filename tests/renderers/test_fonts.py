"""The font chain: faces loaded when first needed, and run.json's sha256 of every face."""

from __future__ import annotations

import hashlib

import pytest

from mmconvert.renderers.fonts import (
    FONT_CHAIN,
    PAGE_FONTS,
    PINNED_SHA256,
    FontChain,
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
    # a character only a later face has loads that face (and those before it) on demand
    index, _ = chain.glyph("中")
    assert FONT_CHAIN[index].name == "Droid Sans Fallback" and chain.fonts.loaded(index)
    assert [font_sha256(spec) for spec in FONT_CHAIN] == [e["sha256"] for e in manifest]


def test_a_bad_font_file_is_refused_when_the_chain_is_made(tmp_path):
    from mmconvert.errors import UsageError
    from mmconvert.renderers.fonts import FontSpec

    bad = tmp_path / "bad.ttf"
    bad.write_bytes(b"not a font")
    with pytest.raises(UsageError, match="bad.ttf: not a font file"):
        FontChain((FontSpec("bad", "the user's font file", path=str(bad)), *FONT_CHAIN))

