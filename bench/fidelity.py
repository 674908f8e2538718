"""Text fidelity over real samples: every character in the PDF text layer, with a real glyph,
inside the margins.

    python bench/fidelity.py [--style NAME|FILE ...] [DATA_DIR ...]   (default: ../shared/data)

Every text value of every sample file (CSV cells, JSON/JSONL strings, Parquet string columns,
lines of text files) is rendered as page context; the PDF text layer is then compared with the
source characters. Prints characters checked, missing, tofu and out-of-margin counts per file.
With ``--style`` (repeatable), each chunk is drawn in the style's draw for it (seed 0), and
checked against the text as the style sets it (newlines reflowed or marked).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.errors import ItemError  # noqa: E402
from mmconvert.items import Item  # noqa: E402
from mmconvert.qa.textlayer import check_pdf  # noqa: E402
from mmconvert.renderers.page import PageJob, PageRenderer, RenderConfig  # noqa: E402
from tests.typed import typed  # noqa: E402

CHUNK = 6000  # characters per rendered item


def strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def texts(path: Path) -> Iterator[str]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as handle:
            for record in csv.reader(handle):
                yield from (cell for cell in record if cell.strip())
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        for record in pq.read_table(path).to_pylist():
            yield from strings(record)
    elif suffix in (".json", ".jsonl") or path.name.endswith(".txt") and _is_jsonl(path):
        text = path.read_text(encoding="utf-8")
        try:
            yield from strings(json.loads(text))
        except json.JSONDecodeError:
            for line in text.splitlines():
                if line.strip():
                    yield from strings(json.loads(line))
    elif suffix == ".txt":
        yield from (line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def _is_jsonl(path: Path) -> bool:
    with open(path, encoding="utf-8") as handle:
        return handle.read(1) in "{["


def chunks(values: Iterator[str]) -> Iterator[str]:
    buffer, size = [], 0
    for value in values:
        buffer.append(value)
        size += len(value)
        if size >= CHUNK:
            yield "\n".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "\n".join(buffer)


def main(argv: list[str]) -> int:
    styles = [argv[i + 1] for i, a in enumerate(argv) if a == "--style"]
    rest = [a for i, a in enumerate(argv) if a != "--style" and (i == 0 or
                                                                 argv[i - 1] != "--style")]
    failed = 0
    for style in styles or [None]:
        if style:
            print(f"== style {style}")
        failed += run(rest, style)
    return 1 if failed else 0


def run(argv: list[str], style: str | None) -> int:
    roots = [Path(a) for a in argv] or [ROOT.parent / "shared" / "data"]
    job = PageJob(RenderConfig(corpus="fidelity", style=style)) if style else None
    total = missing = tofu = outside = refused = 0
    for root in roots:
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in
                       (".csv", ".parquet", ".json", ".jsonl", ".txt")
                       and "LICENSE" not in p.name and "README" not in p.name)
        for path in files:
            f_total = f_missing = f_tofu = f_outside = 0
            for n, text in enumerate(chunks(texts(path))):
                item = Item(id=f"f-{n}", corpus="fidelity", subset="x", split="x", context=text)
                try:
                    renderer = job.renderer_for(item) if job else PageRenderer()
                    result = renderer.render(item, "context", want_pdf=True)
                except ItemError as err:
                    refused += 1
                    print(f"  refused {path.name} chunk {n}: {err.reason}")
                    continue
                row = {"renderer": {"params": {**renderer.options.model_dump(mode="json"),
                                               "render": "context"}},
                       "id": item.id, "corpus": "fidelity", "subset": "x", "split": "x",
                       "context": text, "question": "", "options": []}
                expected = PageRenderer.expected_text(typed(row))
                report = check_pdf(result.pdf, expected, renderer.insets())
                f_total += report.expected
                f_missing += sum(report.missing.values())
                f_tofu += len(report.tofu)
                f_outside += len(report.outside)
            total, missing = total + f_total, missing + f_missing
            tofu, outside = tofu + f_tofu, outside + f_outside
            print(f"{path.relative_to(root)}: {f_total} chars, missing {f_missing}, "
                  f"tofu {f_tofu}, past margin {f_outside}")
    present = 100.0 * (total - missing) / total if total else 0.0
    print(f"\nall: {total} characters, {present:.3f} % present with a real glyph; missing "
          f"{missing}, tofu {tofu}, past the margin {outside}, chunks refused {refused}")
    return 0 if total and not (missing or tofu or outside or refused) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
