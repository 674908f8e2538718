"""The run folder: its identity check, run.json, and resuming."""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import ItemError, RunFolderError
from .items import check_name
from .manifest import MANIFEST, QA, RUN_INFO, SKIPPED, JsonlLog, atomic_write, write_json

DEDUP = "dedup.json"
OWNED = (MANIFEST, SKIPPED, QA, RUN_INFO, DEDUP, "images", "pdf", "originals",
         "layout", "stats")


def item_file(folder: str, item_id: str, suffix: str) -> str:
    """The run-relative name of one of an item's files, ``<folder>/<id><suffix>``: the one
    place where an item's output names are made, always from a checked id."""
    check_name(item_id, f"item {item_id!r}" if isinstance(item_id, str) else "", "id")
    return f"{folder}/{item_id}{suffix}"


def inside(root: Path, rel: str, *, where: str = "", field: str = "path",
           **context: str) -> Path:
    """``root / rel``, refused (an ItemError naming ``where`` and ``field``) unless ``rel`` is
    a relative POSIX path with no '..' that stays inside ``root`` once symlinks are resolved.
    Every file a run writes, and every file a manifest row names, goes through here
    (``context``: the ItemError's ``item_id`` and ``stage``)."""
    parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
    if (not parts or PurePosixPath(rel).is_absolute() or ".." in parts or "\\" in rel
            or "\0" in rel):
        raise ItemError(f"{rel!r} is not a path inside the run folder", where=where,
                        field=field, **context)
    base = root.resolve()
    target = (base / rel).resolve()
    if not target.is_relative_to(base):
        raise ItemError(f"{rel!r} leads outside the run folder {root} (to {target})",
                        where=where, field=field, **context)
    return root / rel


def write_file(root: Path, rel: str, data: bytes) -> None:
    """Write one of a run's files atomically, after checking it stays inside the folder."""
    atomic_write(inside(root, rel), data)


class RunFolder:
    def __init__(self, path: Path):
        self.path = path
        self.manifest = JsonlLog(path / MANIFEST)
        self.skipped = JsonlLog(path / SKIPPED)

    def check(self, identity: dict[str, Any], overwrite: bool) -> None:
        """Refuse a folder that holds another run (unless ``overwrite``) or other files."""
        info_path = self.path / RUN_INFO
        if overwrite:
            return
        if info_path.exists():
            try:
                previous = json.loads(info_path.read_text(encoding="utf-8")).get("config")
            except (json.JSONDecodeError, AttributeError):
                raise RunFolderError(f"{info_path}: damaged; use --overwrite to start "
                                     "again") from None
            if previous != identity:
                changed = sorted(k for k in set(previous or {}) | set(identity)
                                 if (previous or {}).get(k) != identity.get(k))
                raise RunFolderError(
                    f"{self.path} holds a run made with other options "
                    f"({', '.join(changed) or 'config'} differ); use --overwrite to replace it "
                    "or --out to choose another folder")
        elif self.path.exists() and any(self.path.iterdir()):
            raise RunFolderError(f"{self.path} is not empty and is not an mmconvert run folder; "
                                 "choose another --out")

    def create(self, overwrite: bool) -> None:
        if overwrite:
            self.clear()
        self.path.mkdir(parents=True, exist_ok=True)
        self.remove_partial_files()

    def remove_partial_files(self) -> None:
        """Temporary files of writes a kill interrupted (their targets were never replaced)."""
        for temp in self.path.rglob(".*.tmp"):
            temp.unlink(missing_ok=True)

    def clear(self) -> None:
        """Remove what an earlier run wrote (and nothing else)."""
        for name in OWNED:
            target = self.path / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()

    def write_info(self, info: dict[str, Any]) -> None:
        write_json(self.path / RUN_INFO, info)

    def done_ids(self) -> set[str]:
        """Items that need no more work: in the manifest, or recorded as skipped."""
        return {r["id"] for r in self.manifest.read()} | {r["id"] for r in self.skipped.read()}
