"""The config of a ``render`` run of the page renderer: the selection and storage every run
has, the style, the page options, a target, ``--pdf`` and the prompt style."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .page_options import PageOptions
from .styled import StyledConfig, style_field
from .target import TargetOptions


class RenderConfig(StyledConfig):
    """A ``render`` run: which items, how to draw them, what to write."""

    STYLED = "page"
    renderer: Literal["page"] = "page"
    style: str | dict[str, Any] | None = style_field()
    page: PageOptions = Field(default_factory=PageOptions)
    target: TargetOptions = Field(default_factory=TargetOptions)
    pdf: bool = Field(False, description="keep each item's vector PDF in pdf/")
    prompt_style: Literal["cot", "direct"] = Field(
        "cot", description="prompt style of the manifest's prompts")

    def identity(self) -> dict[str, Any]:
        data = super().identity()
        data["page"] = self.page.identity()
        return data
