"""``mmconvert eval decompose DIR...``: why a model lost, in one table, from evaluations of one
model on one set of items.

The folders are ``mmconvert eval`` outputs; each gives what it has:
- the answer conditions: ``blank`` (what the model scores without reading: its prior),
  ``image``, ``text`` and ``text-budget`` (the text at the image's vision budget);
- ``--probe transcribe`` on the same run: the pages' transcription precision;
- ``--probe transcribe`` on the run drawn again with ``--nonce``: the nonce pages' precision.

Per subset and overall, each figure is the mean (percent) over the items it scored, with its
95 % bootstrap interval; the differences that decompose the loss are paired over the items both
figures scored, each with its paired interval:
- ``reading``: image minus blank (what the pages added to the prior);
- ``modality``: text minus image (what reading the pages instead of the text cost);
- ``budget``: text-budget minus image (the text at the same vision budget against the pages);
- ``prior_reading``: real minus nonce precision (the share of "reading" priors supplied).

An evaluation of two or more answer conditions carries its own part of the table
(``decomposition``, results.json's ``decomposition``).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..manifest import write_json
from ..plots import pyplot, save_plot
from ..rows import Row, manifest_entries
from .compare import load_evaluation
from .paired import bootstrap_mean, paired_bootstrap

ANSWERS = ("blank", "image", "text", "text-budget")
FIGURES = (*ANSWERS, "transcription", "nonce")
DIFFERENCES = {"reading": ("image", "blank"), "modality": ("text", "image"),
               "budget": ("text-budget", "image"), "prior_reading": ("transcription", "nonce")}


def blank_page(data: bytes) -> bytes:
    """A page of ``data``'s size and mode holding nothing: every pixel its paper's colour
    (the top-left corner's, inside every renderer's margin), as a PNG."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as page:
        page.load()
        paper = page.getpixel((0, 0))
        blank = Image.new(page.mode, page.size, paper)
        if page.mode == "P" and page.palette is not None:
            blank.putpalette(page.getpalette() or [])
    out = io.BytesIO()
    blank.save(out, "PNG")
    return out.getvalue()



def _figure(values: list[float], seed: int) -> dict[str, Any]:
    low, high = bootstrap_mean(values, seed)
    return {"score": round(100 * sum(values) / len(values), 4), "n": len(values),
            "ci95": [round(100 * low, 4), round(100 * high, 4)]}


def decompose(folders: list[Path], seed: int = 0) -> dict[str, Any]:
    """The table's figures from ``folders`` (``mmconvert eval`` outputs of one model)."""
    if not folders:
        raise UsageError("mmconvert eval decompose needs one or more eval folders")
    scores = Scores()
    models: set[str] = set()
    for folder in folders:
        results, responses = load_evaluation(folder)
        models.add(results["model"])
        scores.add(responses, is_nonce(Path(results["run"])), str(folder))
    if len(models) > 1:
        raise UsageError(f"the folders evaluate {len(models)} models ({', '.join(sorted(models))}"
                         "): decompose one model's evaluations (eval compare puts models side "
                         "by side)")
    if not scores.by_figure:
        raise UsageError("no scored item in the folders: nothing to decompose")
    return {"model": models.pop(), "folders": [str(f) for f in folders],
            **scores.table(seed)}


def decomposition(model: str, responses: list[dict[str, Any]], nonce: bool,
                  seed: int = 0) -> dict[str, Any] | None:
    """One evaluation's own decomposition (its results.json's ``decomposition``): the figures
    of the conditions it asked, over the items they share, and the differences they give; None
    when it has fewer than two figures (nothing to set side by side)."""
    scores = Scores()
    scores.add(responses, nonce, "this evaluation")
    if len(scores.by_figure) < 2:
        return None
    return {"model": model, **scores.table(seed)}


class Scores:
    """Each figure's score per item id, and each item's subset, gathered from response rows."""

    def __init__(self) -> None:
        self.by_figure: dict[str, dict[str, float]] = {}
        self.subsets: dict[str, str] = {}

    def add(self, responses: list[dict[str, Any]], nonce: bool, where: str) -> None:
        """The scored rows of ``responses`` (a transcription is ``nonce`` on a nonce run)."""
        for response in responses:
            condition, score = response["condition"], response.get("score")
            if score is None:
                continue
            name = ("nonce" if nonce else "transcription") if condition == "transcribe" \
                else condition
            if name not in FIGURES:
                continue
            held = self.by_figure.setdefault(name, {})
            if held.get(response["id"], score) != score:
                raise UsageError(f"{where}: item {response['id']}'s {name} is scored in two "
                                 "folders, differently: give each figure once")
            held[response["id"]] = float(score)
            self.subsets.setdefault(response["id"], response.get("subset") or "")

    def table(self, seed: int) -> dict[str, Any]:
        """``figures``, and the ``overall`` row and each subset's."""
        every = set(self.subsets)
        return {"figures": [f for f in FIGURES if f in self.by_figure],
                "overall": self.row(every, seed),
                "subsets": {name: self.row({i for i in every if self.subsets[i] == name}, seed)
                            for name in sorted(set(self.subsets.values()))}}

    def row(self, ids: set[str], seed: int) -> dict[str, Any]:
        scores = self.by_figure
        out: dict[str, Any] = {}
        for name in FIGURES:
            found = [scores[name][i] for i in sorted(ids) if i in scores.get(name, {})]
            if found:
                out[name] = _figure(found, seed)
        for name, (a, b) in DIFFERENCES.items():
            both = sorted(i for i in ids if i in scores.get(a, {}) and i in scores.get(b, {}))
            if both:
                first = [scores[a][i] for i in both]
                second = [scores[b][i] for i in both]
                low, high = paired_bootstrap(first, second, seed)
                out[name] = {"delta": round(100 * (sum(first) - sum(second)) / len(both), 4),
                             "n": len(both), "ci95": [round(100 * low, 4), round(100 * high, 4)]}
        return out


def is_nonce(run: Path) -> bool:
    """Whether ``run``'s rows were drawn with ``--nonce``."""
    manifest = run / "manifest.jsonl"
    if not manifest.is_file():
        return False
    first = next((row for _, row, _ in manifest_entries(manifest) if row is not None), None)
    return first is not None and drawn_nonce([first])


def drawn_nonce(rows: list[Row]) -> bool:
    """Whether these rows of a run were drawn with ``--nonce`` (its first row says)."""
    return bool(rows) and "nonce" in rows[0].metadata


def decompose_table(result: dict[str, Any]) -> str:
    shown = result["figures"]
    differences = [d for d in DIFFERENCES
                   if any(d in row for row in [result["overall"], *result["subsets"].values()])]
    head = f"{'group':<26}" + "".join(f"{f:>14}" for f in shown) + "".join(
        f"{d:>22}" for d in differences)
    lines = [f"why {result['model']} lost: each figure's mean (percent) and, for the "
             "differences, the paired delta with its 95 % interval", head]

    def line(name: str, row: dict[str, Any]) -> str:
        text = f"{name:<26}"
        text += "".join(f"{row[f]['score']:>14.1f}" if f in row else f"{'-':>14}" for f in shown)
        for d in differences:
            if d in row:
                low, high = row[d]["ci95"]
                text += f"{row[d]['delta']:>7.1f} [{low:5.1f},{high:5.1f}]"
            else:
                text += f"{'-':>22}"
        return text

    lines.append(line("all", result["overall"]))
    lines += [line(f"subset {name}", row) for name, row in result["subsets"].items()]
    lines.append("reading = image - blank; modality = text - image; budget = text-budget - "
                 "image; prior_reading = transcription - nonce precision")
    return "\n".join(lines)


def write_decomposition(result: dict[str, Any], out: Path) -> list[str]:
    """``decompose.json`` and, with matplotlib, ``decompose.png`` (each figure per group, with
    its interval) into ``out``; the names written."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "decompose.json", result, indent=1)
    written = ["decompose.json"]
    plt = pyplot()
    if plt is None:
        return written
    groups = {"all": result["overall"], **result["subsets"]}
    shown = result["figures"]
    figure, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups) * len(shown) / 3), 4.5))
    width = 0.8 / len(shown)
    for number, name in enumerate(shown):
        xs = [g + number * width for g in range(len(groups))]
        values = [row[name]["score"] if name in row else 0.0 for row in groups.values()]
        errors = [[row[name]["score"] - row[name]["ci95"][0] if name in row else 0.0
                   for row in groups.values()],
                  [row[name]["ci95"][1] - row[name]["score"] if name in row else 0.0
                   for row in groups.values()]]
        ax.bar(xs, values, width, yerr=errors, capsize=2, label=name, color=f"C{number}")
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], list(groups),
                  rotation=20, fontsize=8)
    ax.set_ylabel("percent (95 % interval)")
    ax.set_ylim(0, 125)  # room for the legend above the bars
    ax.set_yticks(range(0, 101, 20))
    ax.set_title(f"why {result['model']} lost: prior (blank), image, text, and reading "
                 "(transcription, nonce)", fontsize=9)
    ax.legend(fontsize=7, ncol=len(shown), loc="upper center")
    figure.tight_layout()
    save_plot(figure, out / "decompose.png")
    return [*written, "decompose.png"]
