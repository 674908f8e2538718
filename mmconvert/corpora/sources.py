"""Reading corpus rows from where they live: local CSV, JSONL, Parquet, a ``save_to_disk``
folder, or the Hugging Face hub through ``datasets``. Every row comes with a location string
(``file line N`` / ``file row N``) that error messages name."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import HubUnavailableError, ItemError, SourceError, first_line, needs
from ..items import StoredImage
from ..shards import row_group_starts

TABLE_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")
_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_.-]+?)-\d{5}-of-\d{5}$")


@dataclass
class SourceRow:
    index: int  # 0-based position in its file / split, before any filtering
    where: str  # "path line N" or "path row N", for messages
    data: dict[str, Any]
    error: str | None = None  # a row that could not be read: the loader raises it per row

    def check(self) -> dict[str, Any]:
        if self.error:
            raise ItemError(self.error, where=self.where)
        return self.data


@dataclass
class SourceFile:
    path: Path
    subset: str
    split: str | None


def decode_file(path: Path) -> str:
    """UTF-8 text of a file; undecodable bytes survive as surrogates so the row that holds them
    can be named (see ``check_text``)."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise SourceError(f"{path}: cannot read ({err.strerror})") from None
    return raw.decode("utf-8-sig", errors="surrogateescape")


# what decoding with errors="surrogateescape" leaves for a byte that is not UTF-8
_UNDECODED = re.compile("[\udc80-\udcff]")


def check_text(value: str, where: str, field: str) -> str:
    found = None if value.isascii() else _UNDECODED.search(value)
    if found:
        raise ItemError(f"undecodable text: byte 0x{ord(found.group()) - 0xDC00:02X} at "
                        f"character {found.start()} is not UTF-8 (re-save the file as UTF-8)",
                        where=where, field=field)
    return value


def parse_json(text: str):
    """``json.loads`` whose failures on hostile input are ValueErrors with a plain reason:
    nesting too deep for the parser, an integer of more digits than Python converts."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        at = f"line {err.lineno} column {err.colno}" if err.lineno > 1 else \
            f"column {err.colno}"
        raise ValueError(f"malformed JSON ({err.msg} at {at})") from None
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    except ValueError as err:  # int_max_str_digits
        if "digits" in str(err):
            raise ValueError("a number of more than 4300 digits") from None
        raise


def read_csv(path: Path, *, header: bool = True, delimiter: str | None = None
             ) -> Iterator[SourceRow]:
    text = decode_file(path)
    if delimiter is None:
        first = text.split("\n", 1)[0]
        delimiter = ";" if first.count(";") > first.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    names: list[str] | None = None
    index = 0
    try:
        for record in reader:
            line = reader.line_num
            if header and names is None:
                names = [n.strip() for n in record]
                repeated = sorted({n for n in names if names.count(n) > 1})
                if repeated:
                    raise SourceError(f"{path} line {line}: column {repeated[0]!r} appears "
                                      f"{names.count(repeated[0])} times in the header (which "
                                      "one holds the data?)")
                continue
            if not record or record == [""]:
                continue
            error = None
            if names is None:
                data = {str(i): v for i, v in enumerate(record)}
            else:
                data = dict(zip(names, record, strict=False))  # short rows: fields missing
                if len(record) > len(names) and any(v.strip() for v in record[len(names):]):
                    error = f"{len(record)} fields where the header has {len(names)}"
            yield SourceRow(index, f"{path} line {line}", data, error)
            index += 1
    except csv.Error as err:
        raise SourceError(f"{path} line {reader.line_num}: malformed CSV ({err})") from None


def read_jsonl(path: Path) -> Iterator[SourceRow]:
    """Rows of a JSONL file, read a line at a time (a ``.json`` array is read whole)."""
    if path.suffix == ".json" and _starts_with(path, b"["):
        text = decode_file(path)
        try:
            records = parse_json(text)
        except ValueError as err:
            raise SourceError(f"{path}: {err}") from None
        for index, record in enumerate(records):
            ok = isinstance(record, dict)
            yield SourceRow(index, f"{path} record {index}", record if ok else {},
                      None if ok else "not a JSON object")
        return
    index = 0
    for number, line in text_lines(path):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            record = parse_json(line)
            error = None if isinstance(record, dict) else "not a JSON object"
        except ValueError as err:
            record, error = {}, str(err)
        yield SourceRow(index, where, record if error is None else {}, error)
        index += 1


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) of a UTF-8 text file, read a line at a time;
    a BOM is dropped and undecodable bytes survive as surrogates, as ``decode`` does."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below, after the last line)
    except OSError as err:
        raise SourceError(f"{path}: cannot read ({err.strerror})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8",
                                     errors="surrogateescape").rstrip("\n")


def _starts_with(path: Path, prefix: bytes) -> bool:
    """Whether the file's first non-blank bytes (after a UTF-8 BOM) are ``prefix``."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as err:
        raise SourceError(f"{path}: cannot read ({err.strerror})") from None
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(prefix)


def read_parquet(path: Path, columns: list[str] | None = None) -> Iterator[SourceRow]:
    """Rows of a Parquet file (``columns`` of it, or all), read a batch at a time (a file of
    images is never all in memory)."""
    import pyarrow.parquet as pq

    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH, columns=columns)
        index = 0
        for batch in batches:
            for record in batch.to_pylist():
                yield SourceRow(index, f"{path} row {index}", record)
                index += 1
    except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds
        raise SourceError(f"{path}: not a readable Parquet file ({err})") from None


PARQUET_BATCH = 256


def parquet_columns(path: Path) -> list[str]:
    """The column names of a Parquet file, from its footer."""
    import pyarrow.parquet as pq

    try:
        return list(pq.ParquetFile(path).schema_arrow.names)
    except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds
        raise SourceError(f"{path}: not a readable Parquet file ({err})") from None


@dataclass(frozen=True)
class ParquetCell(StoredImage):
    """One cell of a Parquet file, read when it is needed (by the worker that draws the item):
    the row group that holds it is read, and the last one read is kept for the next rows."""

    path: str
    row: int
    column: str

    def load(self) -> str | bytes:
        where = f"{self.path} row {self.row}"
        try:
            value = _parquet_row(self.path, self.row, self.column)
        except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds
            raise ItemError(f"{self.path}: cannot read row {self.row} ({first_line(err)})",
                            where=where, field=self.column) from None
        return image_cell(value, where, self.column)

    def name(self) -> str:
        return f"{Path(self.path).name} row {self.row}"


def image_cell(value: Any, where: str, field: str) -> str | bytes:
    """A dataset's image cell as encoded bytes or a file path: ``{"bytes", "path"}``, raw
    bytes, a decoded PIL image (hub datasets decode on access; encoded again as PNG), or a
    path to an existing file; otherwise an ItemError naming ``where`` and ``field``."""
    if isinstance(value, dict):
        if value.get("bytes"):
            return bytes(value["bytes"])
        value = value.get("path")
    if isinstance(value, (bytes, bytearray)) and value:
        return bytes(value)
    if hasattr(value, "save"):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return buffer.getvalue()
    if isinstance(value, str) and value and Path(value).is_file():
        return value
    raise ItemError("no image data in this row", where=where, field=field)


_ROW_GROUPS: dict[str, tuple[int, list]] = {}


def _parquet_row(path: str, row: int, column: str):
    """The value of ``column`` in row ``row``, through a one-row-group cache per file and
    column (a worker draws consecutive rows)."""
    import bisect

    import pyarrow.parquet as pq

    key = f"{path}\0{column}"
    start, values = _ROW_GROUPS.get(key, (-1, []))
    if not start <= row < start + len(values):
        table = pq.ParquetFile(path)
        starts = row_group_starts(table.metadata)
        group = bisect.bisect_right(starts, row) - 1
        if group < 0 or row >= table.metadata.num_rows:
            raise IndexError(f"the file has {table.metadata.num_rows} rows")
        values = table.read_row_group(group, columns=[column]).column(column).to_pylist()
        start = starts[group]
        _ROW_GROUPS.clear()  # one row group held at a time
        _ROW_GROUPS[key] = (start, values)
    return values[row - start]


def count_rows(path: Path) -> int:
    """Rows of a table file: a Parquet file's from its footer, others by reading it."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path).metadata.num_rows
        except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds
            raise SourceError(f"{path}: not a readable Parquet file ({err})") from None
    return sum(1 for _ in read_table(path))


def read_table(path: Path, **csv_args: Any) -> Iterator[SourceRow]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return read_csv(path, **csv_args)
    if suffix in (".jsonl", ".json"):
        return read_jsonl(path)
    if suffix == ".parquet":
        return read_parquet(path)
    raise SourceError(f"{path}: unsupported file type {suffix!r} "
                      f"(expected one of {', '.join(TABLE_SUFFIXES)})")


def is_saved_dataset(path: Path) -> bool:
    return path.is_dir() and any(
        (path / name).exists() for name in ("dataset_dict.json", "state.json"))


def read_saved(path: Path, split: str | None) -> dict[str, list[SourceRow]]:
    """Rows of a ``save_to_disk`` folder, by split."""
    from datasets import Dataset, load_from_disk

    try:
        data = load_from_disk(str(path))
    except Exception as err:  # noqa: BLE001
        raise SourceError(f"{path}: not a readable save_to_disk folder ({err})") from None
    splits = {split or "train": data} if isinstance(data, Dataset) else dict(data)
    return {name: [SourceRow(i, f"{path} [{name}] row {i}", r) for i, r in enumerate(ds)]
            for name, ds in splits.items()}


KNOWN_SPLITS = ("test", "validation", "val", "dev", "train")


def split_of_path(rel: Path) -> tuple[str, str | None]:
    """(subset, split) a file's place implies: hub shards ``<config>/<split>-00000-of-00001``
    (a shard outside a config folder is the ``default`` config), release files
    ``<name>_<split>.csv`` or ``<split>/<name>.csv``; split None when the path is silent."""
    stem = rel.name[: -len(rel.suffix)] if rel.suffix else rel.name
    parent = rel.parts[-2] if len(rel.parts) > 1 else None
    shard = _SHARD.match(stem)
    if shard:  # "test-sample-00000-of-00001" is a test shard too
        name = shard.group("split")
        first = name.split("-")[0]
        split = name if name in KNOWN_SPLITS or first not in KNOWN_SPLITS else first
        return parent or "default", split
    if parent and rel.suffix.lower() == ".parquet" and stem in KNOWN_SPLITS:
        return parent, stem
    for split in KNOWN_SPLITS:
        if stem.endswith("_" + split):
            return stem[: -len(split) - 1], split
    if parent in KNOWN_SPLITS:
        return stem, parent
    return stem, None


def discover(root: Path, locate=split_of_path, suffixes=TABLE_SUFFIXES) -> list[SourceFile]:
    """Table files under a folder (or the one file given), with the subset and split their
    path implies (``locate(path relative to root) → (subset, split)``)."""
    if not root.exists():
        raise SourceError(f"{root}: no such file or folder")
    if root.is_file():
        files, base = [root], root.parent
    else:
        files = sorted(p for p in root.rglob("*") if p.suffix.lower() in suffixes
                       and p.is_file() and not p.name.startswith("."))
        base = root
        if not files:
            raise SourceError(f"{root}: no {', '.join(suffixes)} files in this folder")
    found = []
    for path in files:
        subset, split = locate(path.relative_to(base))
        found.append(SourceFile(path, subset, split))
    return found


def load_hub(hub_id: str, config: str | None, split: str) -> list[SourceRow]:
    """Rows of one config and split from the hub (or the local ``datasets`` cache)."""
    try:
        import datasets
    except ImportError:  # pragma: no cover - a core dependency
        raise SourceError(needs("reading a hub dataset", "datasets")) from None
    datasets.logging.set_verbosity_error()
    try:  # its retry warnings would bury our one-line message
        from huggingface_hub.utils import logging as hub_logging

        hub_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover
        pass
    label = f"{hub_id}" + (f" config {config}" if config else "") + f" split {split}"
    try:
        if hub_reachable():
            data = datasets.load_dataset(hub_id, config, split=split)
        else:  # no retries against a hub that cannot answer: the local cache, or one line
            with offline():
                try:
                    data = datasets.load_dataset(hub_id, config, split=split)
                except Exception:  # noqa: BLE001 - not cached, in whatever class it says so
                    from huggingface_hub import constants

                    raise HubUnavailableError(
                        f"cannot load {label}: the Hugging Face hub ({constants.ENDPOINT}) "
                        f"does not answer within {HUB_PROBE_SECONDS:g} s and the local datasets "
                        "cache does not hold it; pass --source PATH with a local copy"
                    ) from None
    except HubUnavailableError:
        raise
    except (ValueError, KeyError) as err:
        if "split" in str(err).lower():
            raise SourceError(f"{label}: no such split ({err})") from None
        raise HubUnavailableError(_offline(label, err)) from None
    except Exception as err:  # noqa: BLE001 - connection errors come in many classes
        raise HubUnavailableError(_offline(label, err)) from None
    return [SourceRow(i, f"{hub_id}/{config or ''} [{split}] row {i}", r)
            for i, r in enumerate(data)]


HUB_PROBE_SECONDS = 5.0


def hub_reachable(timeout: float = HUB_PROBE_SECONDS) -> bool:
    """Whether a TCP connection to the hub's endpoint opens within ``timeout`` (always True
    behind a proxy, which the probe cannot see through). ``datasets`` retries an unreachable
    hub with back-off for 25-90 s before it gives up."""
    import os
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or any(os.environ.get(name) for name in (
            "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")):
        return True
    endpoint = urlparse(constants.ENDPOINT)
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((endpoint.hostname, port), timeout=timeout).close()
    except OSError:
        return False
    return True


@contextmanager
def offline():
    """``datasets`` and ``huggingface_hub`` in offline mode: cached datasets load, others
    fail at once."""
    import datasets.config
    from huggingface_hub import constants

    saved = (datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE)
    datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved


def _offline(label: str, err: Exception) -> str:
    return (f"cannot load {label} from the Hugging Face hub ({first_line(err, 160)}); "
            "pass --source PATH with a local copy")
