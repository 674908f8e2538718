"""Image–caption pairs for the caption occluder: a COCO-style folder
(``annotations/captions_<split>.json`` beside ``<split>/`` image folders), a TSV of image path
and caption, or a Hugging Face dataset with an image column and a caption column (the VCR-wiki
and WIT layouts) as a hub id, a ``save_to_disk`` folder or parquet files."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from ..errors import ItemError, SourceError
from ..items import Item, StoredImage, check_name, id_width, row_id, safe_name
from ..options import cli
from .base import Corpus, CorpusOptions, LoadReport, LoadRequest, RowGuard, text_field
from .sources import (
    ParquetCell,
    SourceRow,
    count_rows,
    decode_file,
    discover,
    image_cell,
    is_saved_dataset,
    load_hub,
    parquet_columns,
    parse_json,
    read_parquet,
    read_table,
    text_lines,
)

# caption columns in the order they are looked for (VCR-wiki: caption; WIT: the reference
# description, then the attribution and alt-text ones)
CAPTION_COLUMNS = ("caption", "caption_reference_description", "caption_attribution_description",
                   "caption_alt_text_description", "text", "sentence")
IMAGE_COLUMNS = ("image", "img", "image_path", "file_name")
# a COCO-CN sentence's image: COCO_<split>2014_<12-digit id>#<sentence number>
COCO_CN_NAME = re.compile(r"^COCO_(train|val)2014_(\d{12})(?:#\d+)?$")


@dataclass(frozen=True)
class Part:
    """Some of a group's rows (a file, a saved dataset): how many, and how to read them."""

    count: int
    rows: Callable[[], Iterator[SourceRow]]


class CaptionsOptions(CorpusOptions):
    language: str | None = Field(None, description="the captions' language",
                                 json_schema_extra=cli(default="en"))
    all_captions: bool = Field(False, description="every caption of an image, not only the "
                                                  "first")


class Captions(Corpus[CaptionsOptions]):
    options_model = CaptionsOptions
    name = "captions"
    description = "image-caption pairs (COCO folder, TSV, or HF image+caption dataset)"
    render_part = "context"
    default_split = ""
    language_prompts = True

    def load(self, request: LoadRequest, report: LoadReport) -> Iterable[Item]:
        """A COCO folder's items as a list (its annotation file is read whole); a TSV's,
        a dataset's and Parquet or JSONL files' as they are read."""
        source = request.source
        if source is None:
            raise SourceError("captions: pass --source DIR (a COCO-style folder), FILE.tsv, a "
                              "save_to_disk folder, parquet files, or a hub id owner/name")
        options = self.options_of(request)
        language = options.language or "en"
        guard = RowGuard(request, report)
        if source.is_file() and source.suffix.lower() in (".tsv", ".txt"):
            return self.tsv_items(source, guard, options.language)
        if not source.exists() and "/" in str(source) and not str(source).startswith((".", "/")):
            rows = load_hub(str(source), None, request.split or "test")
            hub = {safe_name(str(source).split("/")[-1], "captions"):
                   [Part(len(rows), lambda: iter(rows))]}
            return self.dataset_items(hub, guard, language)
        if is_saved_dataset(source):
            part = _saved_rows(source, request.split)
            return self.dataset_items({safe_name(source.name, "captions"): [part]}, guard,
                                      language)
        if source.is_dir() and sorted(source.glob("annotations/captions_*.json")):
            return self.coco_items(source, request, report, guard, language)
        if source.exists():
            groups: dict[str, list[Part]] = {}
            for found in discover(source, suffixes=(".parquet", ".jsonl")):
                if request.split and found.split not in (None, request.split):
                    continue
                groups.setdefault(safe_name(found.subset, "captions"), []).append(
                    Part(count_rows(found.path), _file_rows(found.path)))
            return self.dataset_items(groups, guard, language)
        raise SourceError(f"{source}: no such file or folder")

    # -- COCO

    def coco_items(self, root: Path, request, report, guard, language) -> list[Item]:
        items, every = [], self.options_of(request).all_captions
        for path in sorted(root.glob("annotations/captions_*.json")):
            split = path.stem[len("captions_"):]
            if request.split and split != request.split and not (
                    split.startswith(request.split) and split[len(request.split):].isdigit()):
                continue
            try:
                data = parse_json(decode_file(path))
            except ValueError as err:
                raise SourceError(f"{path}: {err}") from None
            for key in ("images", "annotations"):
                if not isinstance(data, dict) or not isinstance(data.get(key), list):
                    raise SourceError(f"{path}: missing {key!r} list (a COCO captions file has "
                                      "images and annotations)")
            licenses = {lic["id"]: lic for lic in data.get("licenses") or ()
                        if isinstance(lic, dict) and _key(lic.get("id"))}
            captions: dict[Any, list[tuple[int, dict]]] = {}
            for number, ann in enumerate(data["annotations"]):
                if isinstance(ann, dict) and _key(ann.get("image_id")):
                    captions.setdefault(ann["image_id"], []).append((number, ann))
            for number, image in enumerate(data["images"]):
                if not isinstance(image, dict) or not _key(image.get("id")):
                    guard.convert(SourceRow.check, SourceRow(number, f"{path} images[{number}]", {},
                                                 "not a COCO image (an object with a number "
                                                 "or text id)"))
                    continue
                anns = captions.get(image["id"], [])
                chosen = anns if every else anns[:1]
                if not chosen:
                    report.dropped["image without caption"] += 1
                for ann_number, ann in chosen:
                    row = SourceRow(ann_number, f"{path} annotations[{ann_number}]",
                              {"image": image, "annotation": ann})
                    item = guard.convert(self.coco_item, row, root, split, licenses, language,
                                         every, number)
                    if item is not None:
                        items.append(item)
        if not items and not report.skipped:
            raise SourceError(f"{root}: no captions for split {request.split!r}")
        return items

    def coco_item(self, row: SourceRow, root: Path, split: str, licenses: dict, language: str,
                  all_captions: bool, number: int) -> Item:
        image, ann = row.data["image"], row.data["annotation"]
        image_id = image.get("id")
        item_id = f"{split}-{image_id:012d}" if isinstance(image_id, int) else row_id(split, number)
        try:
            if all_captions:
                item_id += "-" + check_name(str(ann.get("id")), row.where, "id")
            caption = text_field(ann, "caption", row.where)
            file_name = text_field(image, "file_name", row.where)
            if not caption.strip():
                raise ItemError("empty caption", where=row.where, field="caption")
            path = root / split / file_name
            if not path.is_file():
                raise ItemError(f"image file {path} not found", where=row.where,
                                field="file_name")
        except ItemError as err:
            err.item_id = item_id
            raise
        lic = licenses.get(image.get("license"), {})
        metadata = {"image_id": image_id, "caption_id": ann.get("id"), "file_name": file_name,
                    "width": image.get("width"), "height": image.get("height"),
                    "license": lic.get("name"), "license_url": lic.get("url"),
                    "flickr_url": image.get("flickr_url"), "coco_url": image.get("coco_url")}
        return Item(id=item_id, corpus=self.name, subset=split, split=split, language=language,
                    context=caption.strip(), metadata=metadata, origin=row.where,
                    image=str(path))

    # -- TSV

    def tsv_items(self, path: Path, guard: RowGuard, language: str | None) -> Iterator[Item]:
        """The file's pairs as its lines are read."""
        return guard.convert_each(_tsv_rows(path), self.tsv_item, path.parent,
                                  safe_name(path.stem, "captions"), language)

    def tsv_item(self, row: SourceRow, base: Path, subset: str, language: str | None) -> Item:
        item_id = row_id(subset, row.index)
        fields = row.data["fields"]
        if len(fields) < 2:
            raise ItemError("expected image path<TAB>caption", where=row.where, item_id=item_id)
        name = fields[0].strip()
        metadata: dict[str, Any] = {"image_path": fields[0]}
        coco_cn = COCO_CN_NAME.match(name)
        if coco_cn:  # COCO-CN: <COCO 2014 image name>#<sentence>, Chinese
            image = _coco_image(base, coco_cn.group(1), coco_cn.group(2))
            metadata = {"coco_cn_name": name, "image_id": int(coco_cn.group(2))}
            language = language or "zh"
        else:
            image = (base / name) if not Path(name).is_absolute() else Path(name)
        caption = "\t".join(fields[1:]).strip()
        if not caption:
            raise ItemError("empty caption", where=row.where, field="caption", item_id=item_id)
        if not image.is_file():
            hint = (" (a COCO-CN line names a COCO image: keep the file in the COCO folder, "
                    "beside its train2017/ and val2017/ or train2014/ and val2014/)"
                    if coco_cn else "")
            raise ItemError(f"image file {image} not found{hint}", where=row.where,
                            field="image", item_id=item_id)
        return Item(id=item_id, corpus=self.name, subset=subset, split="test",
                    language=language or "en", context=caption, metadata=metadata,
                    origin=row.where, image=str(image))

    # -- datasets with an image column

    def dataset_items(self, groups: dict[str, list[Part]], guard: RowGuard,
                      language: str) -> Iterator[Item]:
        """Each group's rows, numbered across its parts (files), as they are read: the
        parts' row counts (a Parquet footer's) set the width of the ids before any row."""
        for subset, parts in groups.items():
            width = id_width(sum(part.count for part in parts))
            yield from guard.convert_each(_numbered_rows(parts), self.dataset_item, subset,
                                          width, language)

    def dataset_item(self, row: SourceRow, subset: str, width: int, language: str) -> Item:
        item_id = row_id(subset, row.index, width)
        try:
            data = row.check()
            image_column, caption_column = _columns(data, row.where)
            caption = text_field(data, caption_column, row.where)
            if not caption.strip():
                raise ItemError("empty caption", where=row.where, field=caption_column)
            image = _image_bytes(data[image_column], row.where, image_column)
        except ItemError as err:
            err.item_id = item_id
            raise
        metadata = {k: v for k, v in data.items()
                    if k not in (image_column, caption_column) and isinstance(v, (str, int, float))
                    and not isinstance(v, bool)}
        return Item(id=item_id, corpus=self.name, subset=subset, split="test",
                    language=language, context=caption.strip(), metadata=metadata,
                    origin=row.where, image=image)


def _coco_image(base: Path, split: str, digits: str) -> Path:
    """A COCO image by its 2014 name, in a 2017 (``train2017/<id>.jpg``) or 2014 layout beside
    the file; the first candidate when none exists (its absence is then reported)."""
    candidates = [base / f"{split}2017" / f"{digits}.jpg",
                  base / ("val2017" if split == "train" else "train2017") / f"{digits}.jpg",
                  base / f"{split}2014" / f"COCO_{split}2014_{digits}.jpg",
                  base / f"COCO_{split}2014_{digits}.jpg"]
    return next((c for c in candidates if c.is_file()), candidates[0])


def _columns(data: dict, where: str) -> tuple[str, str]:
    image = next((c for c in IMAGE_COLUMNS if c in data), None)
    caption = next((c for c in CAPTION_COLUMNS if c in data), None)
    if image is None or caption is None:
        missing = [name for name, col in (("image", image), ("caption", caption)) if col is None]
        raise SourceError(f"{where}: missing column(s) {', '.join(missing)} (captions expects "
                          f"an image column and one of {', '.join(CAPTION_COLUMNS)}; found "
                          f"{', '.join(map(str, data)) or 'none'})")
    return image, caption


def _image_bytes(value: Any, where: str, field: str) -> str | bytes | StoredImage:
    """A dataset image cell (``sources.image_cell``), or a cell left in its file for the
    worker to read."""
    return value if isinstance(value, StoredImage) else image_cell(value, where, field)


def _tsv_rows(path: Path) -> Iterator[SourceRow]:
    """A TSV's pairs as rows (``fields``), numbered from 0, as its lines are read; blank lines
    and a header are passed over."""
    index = 0
    for number, line in text_lines(path):
        fields = line.rstrip("\r").split("\t")
        if not line.strip() or (number == 1 and fields[0].strip().lower() in IMAGE_COLUMNS):
            continue  # blank, or a header
        yield SourceRow(index, f"{path} line {number}", {"fields": fields})
        index += 1


def _numbered_rows(parts: list[Part]) -> Iterator[SourceRow]:
    """A group's rows across its parts, numbered from 0 as they are read; the first row's
    columns are checked before it is given."""
    for index, row in enumerate(row for part in parts for row in part.rows()):
        if index == 0 and not row.error:
            _columns(row.data, row.where)
        yield SourceRow(index, row.where, row.data, row.error)


def _file_rows(path: Path) -> Callable[[], Iterator[SourceRow]]:
    """How to read a file's rows. A Parquet file with an image column is read without it:
    each row's image is a ``ParquetCell`` that the worker drawing the item reads, so the
    driver reads the captions alone (VCR-wiki's photos are most of its bytes)."""
    if path.suffix.lower() != ".parquet":
        return functools.partial(read_table, path)
    names = parquet_columns(path)
    image = next((c for c in IMAGE_COLUMNS if c in names), None)
    if image is None:
        return functools.partial(read_table, path)

    def rows() -> Iterator[SourceRow]:
        others = [name for name in names if name != image]
        for row in read_parquet(path, others):
            row.data[image] = ParquetCell(str(path.resolve()), row.index, image)
            yield row

    return rows


def _saved_rows(path: Path, split: str | None) -> Part:
    """The rows of a saved dataset, read as they are consumed, with its images left encoded
    (decoding every image only to encode it again would waste the load)."""
    from datasets import Dataset, Image, load_from_disk

    try:
        data = load_from_disk(str(path))
    except Exception as err:  # noqa: BLE001
        raise SourceError(f"{path}: not a readable save_to_disk folder ({err})") from None
    if not isinstance(data, Dataset):
        names = list(data)
        name = split if split in data else names[0]
        data = data[name]
    for column, feature in data.features.items():
        if isinstance(feature, Image):
            data = data.cast_column(column, Image(decode=False))

    def rows() -> Iterator[SourceRow]:
        for i, record in enumerate(data):
            yield SourceRow(i, f"{path} row {i}", record)

    return Part(len(data), rows)


def _key(value: Any) -> bool:
    """An id a COCO file can join on: a number or text (not a list or an object)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)
