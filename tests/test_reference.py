"""docs/reference.md is what the commands and option models say: a flag or config key that
changes without the reference failing here (``python -m mmconvert.reference >
docs/reference.md`` writes it again)."""

from __future__ import annotations

from pathlib import Path

from mmconvert.reference import reference

DOC = Path(__file__).resolve().parents[1] / "docs" / "reference.md"


def test_the_reference_is_current():
    assert DOC.read_text(encoding="utf-8") == reference(), (
        "docs/reference.md is out of date: python -m mmconvert.reference > docs/reference.md")


def test_a_changed_flag_changes_the_reference(monkeypatch):
    from mmconvert.render_command import run_command
    from mmconvert.renderers.page import PageOptions

    run_command.cache_clear()
    monkeypatch.setattr(PageOptions.model_fields["font_size"], "default", 11.0)
    try:
        changed = reference()
    finally:
        run_command.cache_clear()
    assert "Type size in points (default: 11)." in changed
    assert changed != DOC.read_text(encoding="utf-8")
