"""What ``mmconvert eval`` does with its parsed options: one run, a sweep's variants, a
comparison, or a dry run's plan."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError


def run_eval(targets: tuple[str, ...], options, out: Path | None, *, dry_run: bool,
             as_json: bool, display: str, echo) -> None:
    """``mmconvert eval TARGETS``; ``echo(text, err=False)`` prints."""
    if targets[0] == "compare":
        from .compare import compare, compare_table

        result = compare([Path(t) for t in targets[1:]])
        echo(json.dumps(result, indent=1) if as_json else compare_table(result))
        return
    if len(targets) != 1:
        raise UsageError("mmconvert eval takes one RUN_DIR or SWEEP_DIR (or: compare DIR...)")
    from ..postprocess.sweep import SWEEP
    from .run import evaluate, plan, table

    source = Path(targets[0])
    label = "".join(c if c.isalnum() or c in ".-" else "_" for c in options.model)
    out = out or source.with_name(f"{source.name}-eval-{label}")
    if (source / SWEEP).is_file():
        from .sweeps import evaluate_sweep, sweep_table

        result = evaluate_sweep(source, out, options, dry_run=dry_run, display=display)
        echo(json.dumps(result, indent=1) if as_json else sweep_table(result))
        return
    if dry_run:
        todo = plan(source, options)
        cost = (f"${todo.estimate_usd:.4f} at most (every reply at its max tokens; vision "
                "tokens by the gpt-4o rule)" if todo.estimate_usd is not None
                else f"unknown: {options.model} is not in the price table")
        tokens = ", ".join(f"{name} {count:,}" for name, count in todo.vision_tokens.items())
        unscored = (f"; {len(todo.unscored)} item(s) have no gold answer and are left out "
                    "(unscored)" if todo.unscored else "")
        echo(f"{len(todo.rows)} item(s) x {len(todo.conditions)} condition(s) "
             f"({', '.join(todo.conditions)}) = {todo.requests} request(s); vision "
             f"tokens: {tokens}; cost: {cost}{unscored}; nothing sent")
        return
    results = evaluate(source, out, options, display=display)
    echo(json.dumps(results, indent=1) if as_json else table(results))
    echo(f"results in {out / 'results.json'}, responses in {out / 'responses.jsonl'}; "
         f"inspect view --log-dir {out / 'logs'}", err=True)
