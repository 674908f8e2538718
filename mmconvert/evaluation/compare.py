"""``mmconvert eval compare DIR...``: evaluations side by side, and ReadBench's mismatch analysis:
for each model the items it gets wrong as images but right as text, and the Jaccard index of
those sets between every two models (how much the models lose on the same items)."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

from ..errors import SourceError, UsageError
from ..manifest import JsonlLog
from .results import unparsed_shares, unparsed_warnings, worst_unparsed


def load_evaluation(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    results, responses = folder / "results.json", folder / "responses.jsonl"
    if not results.is_file() or not responses.is_file():
        raise SourceError(f"{folder}: no results.json and responses.jsonl: not an mmconvert "
                          "eval folder (mmconvert eval RUN_DIR --out DIR writes one)")
    try:
        return json.loads(results.read_text(encoding="utf-8")), JsonlLog(responses).read()
    except json.JSONDecodeError as err:
        raise SourceError(f"{results}: not valid JSON ({err.msg})") from None


def lost_in_images(responses: list[dict[str, Any]]) -> set[str]:
    """Ids scored right as text and wrong as images (scores below 1 count as wrong)."""
    score: dict[tuple[str, str], float | None] = {(r["id"], r["condition"]): r.get("score")
                                                  for r in responses}
    wrong = set()
    for (item, condition), value in score.items():
        image = score.get((item, "image"))
        if condition == "text" and value == 1.0 and image is not None and image < 1.0:
            wrong.add(item)
    return wrong


def compare(folders: list[Path]) -> dict[str, Any]:
    if len(folders) < 2:
        raise UsageError("mmconvert eval compare needs two or more eval folders")
    loaded = [(folder, *load_evaluation(folder)) for folder in folders]
    runs = {results["run"] for _, results, _ in loaded}
    items = [{r["id"] for r in responses} for _, _, responses in loaded]
    common = set.intersection(*items)
    models = []
    for folder, results, responses in loaded:
        overall = results["overall"]
        lost = lost_in_images([r for r in responses if r["id"] in common])
        models.append({"folder": str(folder), "model": results["model"],
                       "run": results["run"],
                       **{c: overall[c]["score"] for c in results["conditions"]},
                       "delta": overall.get("delta"), "delta_ci95": overall.get("delta_ci95"),
                       "unparsed_share": unparsed_shares(results),
                       "lost_in_images": sorted(lost)})
    for model, label in zip(models, labels(models), strict=True):
        model["label"] = label
    pairs = []
    for a, b in combinations(range(len(models)), 2):
        lost_a, lost_b = set(models[a]["lost_in_images"]), set(models[b]["lost_in_images"])
        union = lost_a | lost_b
        pairs.append({"a": models[a]["label"], "b": models[b]["label"],
                      "both": len(lost_a & lost_b), "either": len(union),
                      "jaccard": round(len(lost_a & lost_b) / len(union), 4) if union else None})
    return {"runs": sorted(runs), "common_items": len(common), "models": models,
            "mismatch": pairs}


def labels(models: list[dict[str, Any]]) -> list[str]:
    """A distinct name for each evaluation: its model's, then with its folder's name when
    two evaluated the same model, then with the folder's whole path when those match too."""
    names = [m["model"] for m in models]
    out = []
    for m in models:
        if names.count(m["model"]) == 1:
            out.append(m["model"])
            continue
        folder = Path(m["folder"])
        twins = [Path(o["folder"]).name for o in models if o["model"] == m["model"]]
        out.append(f"{m['model']} ({folder.name if twins.count(folder.name) == 1 else folder})")
    return out


def compare_table(result: dict[str, Any]) -> str:
    def cell(value) -> str:
        return f"{value:8.1f}" if isinstance(value, (int, float)) else f"{'-':>8}"

    width = max(32, *(len(m["label"]) + 2 for m in result["models"]))  # names whole

    lines = [line for m in result["models"]
             for line in unparsed_warnings(m["label"], m.get("unparsed_share"))]
    lines += [f"{result['common_items']} item(s) in common"
              + ("" if len(result["runs"]) == 1 else f" (runs: {', '.join(result['runs'])})"),
              f"{'model':<{width}}{'image':>8}{'text':>8}{'delta':>8}  {'95% CI':>16}"
              f"{'unparsed':>9}{'lost in images':>16}"]
    for m in result["models"]:
        ci = m.get("delta_ci95")
        lines.append(f"{m['label']:<{width}}{cell(m.get('image'))}{cell(m.get('text'))}"
                     f"{cell(m.get('delta'))}  "
                     + (f"[{ci[0]:6.1f}, {ci[1]:6.1f}]" if ci else f"{'-':>16}")
                     + f"{cell(worst_unparsed(m.get('unparsed_share'))):>9}"
                     + f"{len(m['lost_in_images']):>16}")
    lines.append("items right as text but wrong as images, shared between models (Jaccard):")
    for p in result["mismatch"]:
        jaccard = "-" if p["jaccard"] is None else f"{p['jaccard']:.3f}"
        lines.append(f"  {p['a']} / {p['b']}: {p['both']} of {p['either']} ({jaccard})")
    return "\n".join(lines)
