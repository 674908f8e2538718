"""Score a model's replies to this export's items, as ``mmconvert eval`` scores them.

    python score.py PREDICTIONS [--out scores.jsonl]

PREDICTIONS is a JSONL file of ``{"id": ..., "response": ...}`` objects (``prediction`` is taken
too), or a TSV, CSV or XLSX file with ``id`` (or ``index``) and ``prediction`` columns (what
VLMEvalKit writes). Each item is scored by ``mmconvert_answers.py`` beside this file with its
scoring spec from ``scoring.jsonl``; the figures printed are the mean score (percent), the
items, and the share of replies the scorer could not read. An item with no reply is counted
as missing, never as 0.
"""

import argparse
import csv
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def answers():
    spec = importlib.util.spec_from_file_location("mmconvert_answers",
                                                  os.path.join(HERE, "mmconvert_answers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def specs():
    """Each item's scoring spec, by id."""
    with open(os.path.join(HERE, "scoring.jsonl"), encoding="utf-8") as handle:
        return {row["id"]: row["scoring"] for row in map(json.loads, handle) if row}


def replies(path):
    """(id, reply) of each prediction in ``path``."""
    if path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    yield str(row["id"]), row.get("response", row.get("prediction"))
        return
    if path.endswith(".xlsx"):
        import pandas

        table = pandas.read_excel(path)
        rows = table.to_dict("records")
    else:
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t" if path.endswith(".tsv") else ","))
    for row in rows:
        key = row.get("id") if row.get("id") not in (None, "") else row.get("index")
        reply = row.get("prediction")
        yield str(key), "" if reply is None or reply != reply else str(reply)


def score_file(path):
    """Each item's score, as ``mmconvert_answers.score`` gives it, by id."""
    scorer, wanted = answers(), specs()
    return {key: scorer.score(wanted[key], reply) for key, reply in replies(path)
            if key in wanted}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predictions")
    parser.add_argument("--out", default="scores.jsonl")
    args = parser.parse_args()
    scored = score_file(args.predictions)
    if not scored:
        sys.exit(f"{args.predictions}: no reply to an item of this export")
    with open(args.out, "w", encoding="utf-8") as handle:
        for key, result in scored.items():
            handle.write(json.dumps({"id": key, **result}, ensure_ascii=False) + "\n")
    values = [r["score"] for r in scored.values()]
    unparsed = sum(not r["parsed"] for r in scored.values())
    print(f"score {100 * sum(values) / len(values):.2f} over {len(values)} item(s); "
          f"{100 * unparsed / len(values):.1f} % unparsed (scored 0); "
          f"{len(specs()) - len(values)} item(s) without a reply; per item: {args.out}")


if __name__ == "__main__":
    main()
