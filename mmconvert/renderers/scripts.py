"""The script a character is written in, by Unicode block: one table for the font a shaped
cluster prefers (``renderers.shaping``) and the Tesseract language that reads it
(``qa.ocr``). Names are UCDN's, by which MuPDF's built-in Noto faces are looked up."""

from __future__ import annotations

from functools import lru_cache

SCRIPT_BLOCKS: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    ("LATIN", ((0x41, 0x24F), (0x1E00, 0x1EFF))),
    ("GREEK", ((0x370, 0x3FF), (0x1F00, 0x1FFF))),
    ("CYRILLIC", ((0x400, 0x52F),)),
    ("HEBREW", ((0x590, 0x5FF), (0xFB1D, 0xFB4F))),
    ("ARABIC", ((0x600, 0x6FF), (0x750, 0x77F), (0x870, 0x8FF), (0xFB50, 0xFDFF),
                (0xFE70, 0xFEFC))),
    ("DEVANAGARI", ((0x900, 0x97F), (0xA8E0, 0xA8FF))),
    ("BENGALI", ((0x980, 0x9FF),)),
    ("TAMIL", ((0xB80, 0xBFF),)),
    ("THAI", ((0xE00, 0xE7F),)),
    ("LAO", ((0xE80, 0xEFF),)),
    ("MYANMAR", ((0x1000, 0x109F),)),
    ("KHMER", ((0x1780, 0x17FF),)),
    ("HAN", ((0x2E80, 0x2FDF), (0x3000, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
             (0xF900, 0xFAFF), (0xFF00, 0xFFEF), (0x20000, 0x3134F))),
    ("EMOJI", ((0x1F000, 0x1FAFF),)),
)


@lru_cache(maxsize=8192)
def script_of(char: str) -> str | None:
    """The script of ``char`` (``SCRIPT_BLOCKS``), or None outside those blocks."""
    code = ord(char)
    for name, ranges in SCRIPT_BLOCKS:
        if any(low <= code <= high for low, high in ranges):
            return name
    return None
