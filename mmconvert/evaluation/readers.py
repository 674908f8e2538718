"""Real readers on this machine: two local OCR engines that ``eval`` (and so ``curve`` and
``frontier``) takes as models, with no server and no key.

- ``ocr/tesseract``: Tesseract (the QA's engine, ``qa.ocr``), page segmentation mode 3
  (automatic), each page read as it is drawn (no enlarging). ``ocr/tesseract:LANGS`` names
  its languages (``ocr/tesseract:chi_sim+eng``); by default ``eng``.
- ``ocr/rapidocr``: PP-OCRv4 (its Chinese and English detection and recognition models)
  through RapidOCR's ONNX runtime; the model files ship inside the ``rapidocr-onnxruntime``
  wheel (``pip install 'mmconvert[ocr]'``, pinned).

Each registers as an inspect_ai model API (``ocr``) and answers every request with the
transcription of the images in its last message, pages in order, lines joined by newlines,
pages by a blank line. It reads nothing else of the prompt, so ``eval`` asks it only what a
transcription answers: the image condition of items scored by RULER's string match (a
haystack's needle counts when its value can be read off the page). A multiple-choice page's
transcription ("A. Mercury ...") would be read as choosing A: such a run is refused in one
line.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

from ..errors import UsageError, did_you_mean, needs
from ..qa.ocr import ocr, require_languages, tesseract_version

PREFIX = "ocr/"
# the item metrics a transcription is scored by as it is: a needle counts when its value can
# be read off the page (RULER's string match)
READABLE = ("ruler:string_match_all",)
ENGINES = ("tesseract", "rapidocr")
TESSERACT_PSM = 3


def is_reader(model: str) -> bool:
    return model.startswith(PREFIX)


def engine_of(model: str) -> tuple[str, str | None]:
    """``ocr/ENGINE[:LANGS]``'s engine and languages; an unknown engine is one line."""
    name = model[len(PREFIX):]
    engine, _, langs = name.partition(":")
    if engine not in ENGINES:
        raise UsageError(f"--model {model}: no such reader (readers: "
                         f"{', '.join(PREFIX + e for e in ENGINES)})" + did_you_mean(engine,
                                                                                      ENGINES))
    if langs and engine != "tesseract":
        raise UsageError(f"--model {model}: only ocr/tesseract takes languages "
                         "(ocr/tesseract:chi_sim+eng)")
    return engine, langs or None


def check_reader(model: str) -> None:
    """The reader can run here: its package or program is installed (one line naming the
    extra or the Debian package otherwise)."""
    engine, langs = engine_of(model)
    if engine == "rapidocr":
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except ImportError:
            raise UsageError(needs("--model ocr/rapidocr", "rapidocr-onnxruntime", "ocr")) \
                from None
    else:
        tesseract_version()
        require_languages(langs or "eng")


_RAPID: Any = None
_RAPID_LOCK = threading.Lock()


def read_page(engine: str, langs: str | None, data: bytes) -> str:
    """One page's text, as ``engine`` reads it: lines joined by newlines."""
    if engine == "tesseract":
        return ocr(data, langs or "eng", psm=TESSERACT_PSM).text.strip()
    global _RAPID
    with _RAPID_LOCK:  # one engine a process: its sessions are not safe to share in threads
        if _RAPID is None:
            from rapidocr_onnxruntime import RapidOCR

            _RAPID = RapidOCR()
        found, _ = _RAPID(data)
    return "\n".join(str(line[1]) for line in found or [])


def images_in(messages: list[Any]) -> list[bytes]:
    """The image bytes of the last user message (data URIs, as ``eval`` sends them)."""
    from inspect_ai.model import ContentImage

    for message in reversed(messages):
        if getattr(message, "role", None) != "user":
            continue
        content = message.content if isinstance(message.content, list) else []
        return [base64.b64decode(part.image.split(",", 1)[1]) for part in content
                if isinstance(part, ContentImage) and part.image.startswith("data:")]
    return []


def register() -> None:
    """Register the ``ocr`` model API with inspect_ai (once a process)."""
    global _REGISTERED
    if _REGISTERED:
        return
    import anyio
    from inspect_ai.model import ModelAPI, ModelOutput, modelapi

    @modelapi(name="ocr")
    def _ocr():
        class OcrReader(ModelAPI):
            def __init__(self, model_name: str, base_url: str | None = None,
                         api_key: str | None = None, config: Any = None, **kwargs: Any):
                from inspect_ai.model import GenerateConfig

                super().__init__(model_name=model_name, base_url=base_url, api_key=api_key,
                                 config=config or GenerateConfig())
                self.engine, self.langs = engine_of(PREFIX + model_name)

            async def generate(self, input, tools, tool_choice, config):
                pages = images_in(input)
                texts = [await anyio.to_thread.run_sync(read_page, self.engine, self.langs,
                                                        page) for page in pages]
                return ModelOutput.from_content(model=PREFIX + self.model_name,
                                                content="\n\n".join(texts))

            def max_connections(self) -> int:
                return 2  # CPU-bound: a page a core

        return OcrReader

    _REGISTERED = True


_REGISTERED = False


def reader_model(model: str):
    """inspect_ai's model for reader ``model`` (``ocr/tesseract``)."""
    from inspect_ai.model import get_model

    engine_of(model)
    register()
    return get_model(model, memoize=False)
