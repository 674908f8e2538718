"""``mmconvert eval SWEEP_DIR``: every variant of a sweep (and its base) evaluated, and the score
plotted against each axis (PPI, scale, rotation, JPEG quality, any --vary transform) with 95 %
intervals. The text twin is the same in every variant, so its requests after the first are
answered from the response cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SourceError
from ..manifest import JsonlLog, write_json
from ..plots import write_figure
from ..postprocess.sweep import SWEEP
from ..postprocess.transforms import in_order
from ..renderers import run_renderer
from ..renderers.base import Redraws
from ..runfolder import open_run
from .paired import bootstrap_mean
from .results import unparsed_shares, unparsed_warnings, worst_unparsed
from .run import EvalOptions, evaluate, plan


def variants(sweep: Path) -> tuple[Path, list[dict[str, Any]]]:
    try:
        record = json.loads((sweep / SWEEP).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise SourceError(f"{sweep / SWEEP}: cannot read ({err})") from None
    base = (sweep / record.get("base", "base")).resolve()
    found = []
    for variant in record.get("variants") or []:
        axis = next((k for k in variant if k not in ("name", "path")), None)
        found.append({"name": variant["name"], "path": (sweep / variant["path"]).resolve(),
                      "axis": axis, "value": variant.get(axis)})
    if not found:
        raise SourceError(f"{sweep / SWEEP}: lists no variant")
    return base, found


def image_interval(responses: Path, seed: int, condition: str = "image") -> list[float] | None:
    """95 % bootstrap interval (percent) of the image condition's mean score (or another
    condition's: ``transcribe``)."""
    values = [r["score"] for r in JsonlLog(responses).read()
              if r["condition"] == condition and r.get("score") is not None]
    if not values:
        return None
    return [round(100 * bound, 4) for bound in bootstrap_mean(values, seed)]


def evaluate_sweep(sweep: Path, out: Path, options: EvalOptions, *, dry_run: bool = False,
                   display: str = "none") -> dict[str, Any]:
    base, found = variants(sweep)
    # a variant at the base's own value (--ppi 92.9 of a 92.9 run) is the base run itself:
    # it is evaluated once, as the base, and named beside it
    same = [v["name"] for v in found if v["path"] == base]
    points = [{"name": "base", "path": base, "axis": None, "value": None, "same_as": same},
              *[v for v in found if v["path"] != base]]
    if dry_run:
        plans = [plan(p["path"], options) for p in points]
        return {"sweep": str(sweep), "variants": len(points),
                "requests": sum(p.requests for p in plans),
                "estimate_usd": (None if any(p.estimate_usd is None for p in plans)
                                 else round(sum(p.estimate_usd or 0.0 for p in plans), 4))}
    rows = []
    for point in points:
        folder = out / point["name"]
        results = evaluate(point["path"], folder, options, display=display,
                           cache=out / "cache")
        overall = results["overall"]
        rows.append({"name": point["name"], "same_as": point.get("same_as") or [],
                     "axis": point["axis"], "value": point["value"],
                     **{c: overall[c]["score"] for c in results["conditions"]},
                     "image_ci95": image_interval(folder / "responses.jsonl", options.seed),
                     "delta": overall.get("delta"), "delta_ci95": overall.get("delta_ci95"),
                     "unparsed_share": unparsed_shares(results),
                     "n": overall[results["conditions"][0]]["n"]})
    result = {"sweep": str(sweep.resolve()), "model": options.model, "points": rows,
              "plots": [str(p) for p in plot(rows, out, base_values(base, rows))]}
    write_json(out / "sweep_results.json", result, indent=1)
    return result


def base_values(base: Path, rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each axis's value at the base run: its PPI for ``ppi``, a transform's ``identity``
    (the value that changes nothing: scale 1, rotation 0, blur 0) for its axis; None for an
    axis the base has no value on (a JPEG quality: the base is not a JPEG)."""
    info = open_run(base).info()
    values: dict[str, float | None] = {}
    for axis in {r["axis"] for r in rows if r["axis"]}:
        renderer = run_renderer(base, info)
        if axis == "ppi" and issubclass(renderer, Redraws):
            values[axis] = renderer.base_ppi(info.get("config") or {})
        else:
            values[axis] = next((t.identity for t in in_order() if t.axis == axis), None)
    return values


def axis_points(rows: list[dict[str, Any]], axis: str, at: float | None
                ) -> list[dict[str, Any]]:
    """The points of one axis's plot, by value: its variants, and the base run at its own
    value ``at`` on the axis when it has one."""
    base = next(r for r in rows if r["name"] == "base")
    points = [r for r in rows if r["axis"] == axis and isinstance(r["value"], (int, float))]
    if isinstance(at, (int, float)):
        points.append({**base, "value": at})
    return sorted(points, key=lambda r: r["value"])


def plot(rows: list[dict[str, Any]], out: Path,
         bases: dict[str, float | None] | None = None) -> list[Path]:
    """One PNG per axis: the image score with its interval against the axis value, the base
    run among them (at its own value on the axis, else as a dotted line of its score with its
    interval, which no value of the axis has), the text score as a line."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    base = next(r for r in rows if r["name"] == "base")
    made = []
    for axis in sorted({r["axis"] for r in rows if r["axis"]}):
        at = (bases or {}).get(axis)
        points = axis_points(rows, axis, at)
        if not points or any(r.get("image") is None for r in points):
            continue
        figure, ax = plt.subplots(figsize=(6, 4))
        xs = [r["value"] for r in points]
        ys = [r["image"] for r in points]
        lows = [r["image"] - (r["image_ci95"] or [r["image"]] * 2)[0] for r in points]
        highs = [(r["image_ci95"] or [r["image"]] * 2)[1] - r["image"] for r in points]
        ax.errorbar(xs, ys, yerr=[lows, highs], marker="o", capsize=4, label="image (95 % CI)")
        if isinstance(at, (int, float)) and base.get("image") is not None:
            ax.plot([at], [base["image"]], marker="*", markersize=14, linestyle="none",
                    color="black", label=f"base ({axis} {at:g})")
        elif base.get("image") is not None:  # the base has no value on this axis
            ax.axhline(base["image"], color="black", linestyle=":",
                       label=f"base image (no {axis})")
            if base.get("image_ci95"):
                ax.axhspan(*base["image_ci95"], color="black", alpha=0.08)
        if base.get("text") is not None:
            ax.axhline(base["text"], color="grey", linestyle="--", label="text twin")
        ax.set_xlabel(axis)
        ax.set_ylabel("score (%)")
        ax.set_ylim(0, 105)
        ax.legend()
        ax.set_title(f"score against {axis}")
        path = out / f"sweep-{axis}.png"
        figure.tight_layout()
        write_figure(figure, path)
        plt.close(figure)
        made.append(path)
    return made


def sweep_table(result: dict[str, Any]) -> str:
    if "points" not in result:
        cost = ("unknown" if result["estimate_usd"] is None
                else f"${result['estimate_usd']:.4f} at most")
        return (f"{result['variants']} run(s) in {result['sweep']}: {result['requests']} "
                f"request(s); cost: {cost}; nothing sent")
    names = [" = ".join([r["name"], *r.get("same_as", [])]) for r in result["points"]]
    width = max(len("variant"), *map(len, names)) + 2  # names whole, never cut
    lines = [line for name, r in zip(names, result["points"], strict=True)
             for line in unparsed_warnings(name, r.get("unparsed_share"))]
    lines.append(f"{'variant':<{width}}{'image':>8}{'95% CI':>18}{'text':>8}{'delta':>8}"
                 f"{'unparsed':>9}{'n':>6}")
    for name, r in zip(names, result["points"], strict=True):
        ci = r.get("image_ci95")
        worst = worst_unparsed(r.get("unparsed_share"))
        lines.append(f"{name:<{width}}"
                     + (f"{r['image']:8.1f}" if r.get("image") is not None else f"{'-':>8}")
                     + (f"  [{ci[0]:5.1f}, {ci[1]:5.1f}]" if ci else f"{'-':>18}")
                     + (f"{r['text']:8.1f}" if r.get("text") is not None else f"{'-':>8}")
                     + (f"{r['delta']:8.1f}" if r.get("delta") is not None else f"{'-':>8}")
                     + (f"{worst:9.1f}" if worst is not None else f"{'-':>9}")
                     + f"{r['n']:>6}")
    lines += [f"plot: {p}" for p in result["plots"]]
    return "\n".join(lines)
