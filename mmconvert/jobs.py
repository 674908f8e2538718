"""What a worker does with one item, for any renderer: the ``Job`` contract.

Each renderer's module holds its own job (``PageJob``, ``OccludeJob``, ``GenerateJob``, or a
plugin's), made by ``Renderer.job(config, api)``: it draws one item and returns its manifest row
with the bytes of its files (``runfolder.Output``); the converter's sink writes them. The
converter is the same for every kind of run and asks the job only what this contract declares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import ItemError
from .items import Item, RenderPart
from .prompts import Prompts
from .runfolder import Output, item_file

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .config import ApiOptions, Stored
    from .corpora import Corpus
    from .rows import Row
    from .runfolder import Output


class Job:
    """One run's work on its items.

    A worker takes the items in groups of ``batch`` consecutive tasks (the same groups for any
    executor and worker count), calls ``prepare`` on each group's items, then ``run`` on each
    item: a job whose work is cheaper in bulk (the occluder's entity model) does it there.
    ``threads``: requests in flight, for work that waits on the network (0: processes).
    """

    renderer: Any
    config: Stored
    batch: int = 1
    threads: int = 0
    # how it reaches a paid API (``ApiOptions``), for a job that calls one; what a worker in
    # another process is given along with the config (never a key)
    api_options: ApiOptions | None = None

    @property
    def unit(self) -> str:
        return self.renderer.unit

    @property
    def row_model(self) -> type[BaseModel] | None:
        """The model its rows must fit: its renderer's (the sink checks each row with it);
        None for a job without one, whose rows are checked by the renderer they name."""
        return getattr(getattr(self, "renderer", None), "row_model", None)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        """What of ``item`` becomes image."""
        raise NotImplementedError

    def fonts(self) -> list[dict[str, str]]:
        """The font files it draws with (name, file, sha256), for run.json."""
        return []

    def warm(self) -> None:
        """Start, in the background, what drawing the first item will need: called when a
        fresh run's items are all drawn in this process, before run.json is written (nothing
        by default)."""

    def prepare(self, items: list[Item]) -> None:
        """Work done once for a group of items before each is run (none by default)."""

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        """Draw ``item``: its row and the bytes of its files."""
        raise NotImplementedError

    def pictures(self, item: Item, part: RenderPart) -> list[Any] | None:
        """The images of ``item`` the model is shown, drawn in memory as Pillow images, with
        no file encoded (``load_recipe().render()``, the training transform): the pixels a
        decoding of ``run``'s files gives. None: this job draws only files (the caller
        decodes them)."""
        return None

    def resuming(self, info: dict[str, Any]) -> None:
        """Refuse, with a one-line error, to resume a run whose run.json (``info``) this
        job cannot continue alike (none refused by default)."""

    def notes(self) -> list[str]:
        """What the run says before it starts, and run.json keeps (none by default)."""
        return []

    def dry_run(self, tasks: list[tuple[Item, RenderPart, tuple[str, ...]]]
                ) -> tuple[list[str], str]:
        """For a job that calls a paid API (``--dry-run``): each item's prompts, and a
        summary of counts and the estimated cost; nothing is called."""
        raise NotImplementedError

    def report(self, rows: Callable[[], list[Row]]) -> dict[str, Any]:
        """What run.json records of the run beyond its config (a paid job's spend);
        ``rows()`` reads the manifest's typed rows, for a report that needs them."""
        return {}


def row_head(item: Item, renderer, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """The fields every renderer's row starts with."""
    return {"id": item.id, "corpus": item.corpus, "subset": item.subset, "split": item.split,
            "language": item.language,
            "renderer": {"name": renderer.name, "version": renderer.version, "params": params},
            "seed": seed}


def question_fields(item: Item, prompt_style: str, prompt: str,
                    text_prompt: str) -> dict[str, Any]:
    """The fields a question item's row holds after what its renderer drew: its prompts and
    its text fields (in this order, which manifests keep)."""
    return {"prompt_style": prompt_style, "prompt": prompt, "text_prompt": text_prompt,
            "question": item.question, "context": item.context, "options": item.options,
            "answer": item.answer, "metadata": item.metadata}


class DrawJob(Job):
    """The job of a renderer that draws images (``Renderer.draw``): each item's images saved
    as PNG (``images/<id>.png``, or ``<id>_pNNN.png`` when it draws several), in the first
    role of its profile, its row a ``rows.QuestionRow`` (its prompts, text fields and the
    options it drew with)."""

    config: Any  # the renderer's config model (``Renderer.config_model``)

    def __init__(self, renderer: Any, config: Any):
        self.config = config
        self.renderer = renderer(getattr(config, renderer.name.replace("-", "_")))
        self.prompts = Prompts(config.prompt_dir)

    def part(self, item: Item, corpus: Corpus) -> RenderPart:
        return corpus.part_for(item)

    def run(self, item: Item, part: RenderPart, prompt_keys: tuple[str, ...]) -> Output:
        import io

        renderer, output = self.renderer, Output()
        images = list(renderer.draw(item, part))
        if not images:
            raise ItemError(f"the {renderer.name} renderer drew no image", where=item.origin
                            or item.id, field=part, item_id=item.id, stage="render")
        entries = []
        for number, image in enumerate(images, start=1):
            png = io.BytesIO()
            image.save(png, format="PNG")
            suffix = ".png" if len(images) == 1 else f"_p{number:03d}.png"
            entries.append(output.image(item_file("images", item.id, suffix), png.getvalue(),
                                        renderer.profile.roles[0], *image.size))
        style = self.config.prompt_style
        prompt, text_prompt = self.prompts.pair(item, part, style, prompt_keys)
        output.row = renderer.row_model(
            **row_head(item, renderer, renderer.options.model_dump(mode="json"),
                       self.config.seed),
            images=entries, **question_fields(item, style, prompt, text_prompt))
        return output
