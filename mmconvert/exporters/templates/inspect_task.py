"""An inspect_ai task over this export: each item asked as its images (``condition="image"``,
the multimodal prompt with the images the model is shown) or as its text-only twin
(``condition="text"``), scored by ``mmconvert_answers.py`` beside this file with the item's
scoring spec, as ``mmconvert eval`` scores it.

    inspect eval inspect_task.py -T condition=image --model openai-api/NAME/MODEL
    inspect eval inspect_task.py -T condition=text --model ...

The ``parsed`` metadata of each score says whether the scorer could read the reply.
"""

import base64
import glob
import importlib.util
import json
import os

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText
from inspect_ai.scorer import Score, mean, scorer
from inspect_ai.solver import generate

HERE = os.path.dirname(os.path.abspath(__file__))


def answers():
    spec = importlib.util.spec_from_file_location("mmconvert_answers",
                                                  os.path.join(HERE, "mmconvert_answers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows():
    """The export's rows, from its parquet files (images as their bytes)."""
    import pyarrow.parquet as pq

    for path in sorted(glob.glob(os.path.join(HERE, "data", "*.parquet"))):
        yield from pq.read_table(path).to_pylist()


def image_uri(image):
    data = image["bytes"]
    kind = "jpeg" if data[:3] == b"\xff\xd8\xff" else "png"
    return f"data:image/{kind};base64," + base64.b64encode(data).decode("ascii")


def sample(row, condition):
    images = [] if condition == "text" else row["images"]
    text = row["text_prompt"] if condition == "text" else row["prompt"]
    content = [ContentImage(image=image_uri(image)) for image in images]
    content.append(ContentText(text=text))
    return Sample(id=row["id"], input=[ChatMessageUser(content=content)],
                  metadata={"scoring": row["scoring"], "subset": row["subset"] or ""})


@scorer(metrics=[mean()])
def mmconvert_scorer():
    scorer_module = answers()

    async def score(state, target):
        scored = scorer_module.score(state.metadata["scoring"], state.output.completion or "")
        return Score(value=scored["score"], answer=scored["answer"],
                     metadata={"parsed": scored["parsed"], **scored["extra"]})

    return score


@task
def mmconvert(condition: str = "image"):
    if condition not in ("image", "text"):
        raise ValueError(f"condition {condition!r}: image or text")
    return Task(dataset=MemoryDataset([sample(row, condition) for row in rows()]),
                solver=generate(), scorer=mmconvert_scorer())


if __name__ == "__main__":
    print(json.dumps({"items": sum(1 for _ in rows())}))
