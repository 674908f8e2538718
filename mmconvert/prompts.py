"""Prompt templates: the multimodal prompt of each item and its text-only twin.

Templates are plain text files named ``<kind>_<modality>_<style>.txt`` with ``{placeholder}``
fields (``{{`` and ``}}`` for literal braces). Kinds: ``mcq`` (options in the image, question
as text), ``context`` (context in the image, question as text), ``context_mcq`` (the same for a
question with options, which then stay text), ``all`` (everything in the image), and for the
text twin of a free-form question (no options, no context) ``question``.

A corpus names folders to look in first, most specific first: BABILong ``babilong/qa3/`` then
``babilong/``, LongBench ``longbench/hotpotqa/`` then ``longbench/``, Chinese items
``lang-zh/`` or ``lang-zh-TW/``. An ``instruction.txt`` found the same way fills
``{instruction}`` (per-task instructions). ``--prompt-dir`` points at a folder laid out like
the shipped one; any template found there wins over every shipped one.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Literal

from .errors import UsageError
from .items import Item, RenderPart, option_letter

PromptStyle = Literal["cot", "direct"]
SHIPPED = Path(__file__).parent / "prompts"


def format_options(options: list[str]) -> str:
    return "\n".join(f"{option_letter(i)}. {o}" for i, o in enumerate(options))


def letters(n: int) -> str:
    names = [option_letter(i) for i in range(n)]
    return names[0] if n == 1 else ", ".join(names[:-1]) + " or " + names[-1]


class Prompts:
    def __init__(self, prompt_dir: Path | None = None):
        if prompt_dir is not None and not prompt_dir.is_dir():
            raise UsageError(f"--prompt-dir {prompt_dir}: no such folder")
        self.prompt_dir = prompt_dir
        self._cache: dict[str, tuple[Path, str] | None] = {}

    def template(self, name: str, keys: tuple[str, ...] = (),
                 required: bool = True) -> tuple[Path, str] | None:
        cache_key = "/".join(keys) + "|" + name
        if cache_key not in self._cache:
            for folder in (self.prompt_dir, SHIPPED):
                if folder is None:
                    continue
                path = next((folder / key / f"{name}.txt" for key in (*keys, "")
                             if (folder / key / f"{name}.txt").is_file()), None)
                if path is not None:
                    self._cache[cache_key] = (path, path.read_text(encoding="utf-8"))
                    break
            else:
                self._cache[cache_key] = None
        found = self._cache[cache_key]
        if found is None and required:
            raise UsageError(f"no prompt template {name}.txt")
        return found

    def fill(self, name: str, values: dict[str, str], keys: tuple[str, ...] = ()) -> str:
        found = self.template(name, keys)
        assert found is not None  # a required template that is not there raised
        path, text = found
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(text) if f}
        except ValueError as err:
            raise UsageError(f"{path}: malformed template ({err})") from None
        unknown = sorted(fields - set(values))
        if unknown:
            raise UsageError(f"{path}: unknown placeholder {{{unknown[0]}}} "
                             f"(known: {', '.join(sorted(values))})")
        return text.format_map(values).strip() + "\n"

    def pair(self, item: Item, part: RenderPart, style: PromptStyle,
             keys: tuple[str, ...] = ()) -> tuple[str, str]:
        """(multimodal prompt, text-only twin) for an item rendered with ``part``.

        Whatever is not in the image is in the prompt: a context question's options go with
        its question, and a context that stays text (``--render options``) goes before it.
        An item that carries its own prompts for this part (``metadata.prompts``: ``part``,
        ``image`` and ``text``, as an lm-eval generation task's few-shot prompt) is asked
        with them as they are.
        """
        own = (item.metadata or {}).get("prompts")
        if isinstance(own, dict) and own.get("part") == part and \
                isinstance(own.get("image"), str) and isinstance(own.get("text"), str):
            return own["image"], own["text"]
        options = format_options(item.options)
        question = item.question or ""
        if item.context and item.options:
            question = f"{question}\n\n{options}".strip()
        values = {
            "question": question,
            "context": item.context or "",
            "options": options,
            "letters": letters(len(item.options)) if item.options else "",
            "letter_choices": "/".join(option_letter(i) for i in range(len(item.options))),
            "with_options": " and its answer options" if item.options else "",
            "answer_form": (f"the letter of the correct option ({letters(len(item.options))})"
                            if item.options else "the answer"),
        }
        instruction = self.template("instruction", keys, required=False)
        values["instruction"] = instruction[1].strip() if instruction else ""
        text_kind = "context" if item.context else "mcq" if item.options else "question"
        image_kind = {"options": "mcq", "context": "context", "all": "all"}[part]
        if item.context and item.options:  # reading comprehension with options (LogiQA)
            text_kind = "context_mcq"
            image_kind = "context_mcq" if image_kind == "context" else image_kind
        image_values = values
        if part == "options" and item.context:
            image_values = {**values, "question": f"{item.context}\n\n{item.question or ''}"}
        return (self.fill(f"{image_kind}_image_{style}", image_values, keys),
                self.fill(f"{text_kind}_text_{style}", values, keys))
