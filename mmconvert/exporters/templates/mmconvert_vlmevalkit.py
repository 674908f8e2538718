"""A VLMEvalKit dataset class for this export's TSV, and its scoring, as ``mmconvert eval``
scores the items (``mmconvert_answers.py`` beside this file, with each row's ``scoring``
column).

In VLMEvalKit (its ``vlmeval`` package importable), register the class under the TSV's name
and run it as any dataset; its ``build_prompt`` sends the row's own ``prompt`` with its images
(the options are in the images for ReadBench-style items), and ``evaluate`` scores the
predictions file the kit writes:

    from mmconvert_vlmevalkit import MMConvertDataset
    dataset = MMConvertDataset("NAME")          # NAME.tsv in this folder
    dataset.evaluate("predictions.xlsx")        # {"score": …, "n": …, "unparsed": …}

Without VLMEvalKit, ``score_file(predictions)`` scores a TSV, CSV, XLSX or JSONL of
predictions (``id`` or ``index``, and ``prediction``) the same way.
"""

import base64
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

try:  # VLMEvalKit's base class, when the kit is installed
    from vlmeval.dataset.image_base import ImageBaseDataset as _Base
except ImportError:  # scoring alone
    _Base = object


def answers():
    spec = importlib.util.spec_from_file_location("mmconvert_answers",
                                                  os.path.join(HERE, "mmconvert_answers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(path):
    import pandas

    if path.endswith(".xlsx"):
        return pandas.read_excel(path)
    if path.endswith(".jsonl"):
        return pandas.read_json(path, lines=True)
    return pandas.read_csv(path, sep="\t" if path.endswith(".tsv") else ",",
                           keep_default_na=False)


def score_file(predictions, tsv=None):
    """Each prediction scored with its row's spec: ``{"score", "n", "unparsed", "items"}``
    (percent; ``items`` by id)."""
    scorer = answers()
    data = _table(tsv or _only_tsv())
    specs = {str(row["id"]): row["scoring"] for _, row in data.iterrows()}
    by_index = {str(row["index"]): str(row["id"]) for _, row in data.iterrows()}
    items = {}
    for _, row in _table(predictions).iterrows():
        key = str(row["id"]) if "id" in row and str(row["id"]) in specs else \
            by_index.get(str(row.get("index")))
        if key is None:
            continue
        reply = row.get("prediction")
        reply = "" if reply is None or reply != reply else str(reply)
        items[key] = scorer.score(specs[key], reply)
    values = [r["score"] for r in items.values()]
    n = len(values)
    return {"score": round(100 * sum(values) / n, 4) if n else None, "n": n,
            "unparsed": sum(not r["parsed"] for r in items.values()), "items": items}


def _only_tsv():
    found = [name for name in os.listdir(HERE) if name.endswith(".tsv")]
    if len(found) != 1:
        raise FileNotFoundError(f"{HERE}: expected one .tsv, found {found}")
    return os.path.join(HERE, found[0])


class MMConvertDataset(_Base):
    """The export's TSV as a VLMEvalKit image dataset, scored by mmconvert's scorer."""

    TYPE = "VQA"
    MODALITY = "IMAGE"

    def __init__(self, dataset=None, **kwargs):
        self.dataset_name = dataset or os.path.splitext(os.path.basename(_only_tsv()))[0]
        self.tsv = os.path.join(HERE, f"{self.dataset_name}.tsv")
        self.data = _table(self.tsv)

    @classmethod
    def supported_datasets(cls):
        return [os.path.splitext(os.path.basename(_only_tsv()))[0]]

    def build_prompt(self, line):
        if isinstance(line, int):
            line = self.data.iloc[line]
        images = line["image"]
        listed = json.loads(images.replace("'", '"')) if images.startswith("[") else [images]
        message = []
        for number, encoded in enumerate(listed):
            path = os.path.join(HERE, "images", f"{line['index']}_{number}.png")
            if not os.path.exists(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(base64.b64decode(encoded))
            message.append({"type": "image", "value": path})
        message.append({"type": "text", "value": line["prompt"]})
        return message

    def evaluate(self, eval_file, **judge_kwargs):
        result = score_file(eval_file, self.tsv)
        return {k: v for k, v in result.items() if k != "items"}


__all__ = ["MMConvertDataset", "score_file"]
