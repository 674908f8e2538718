"""The run folder: its identity check, run.json, and resuming."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .errors import RunFolderError
from .manifest import MANIFEST, QA, RUN_INFO, SKIPPED, JsonlLog, write_json

DEDUP = "dedup.json"
OWNED = (MANIFEST, SKIPPED, QA, RUN_INFO, DEDUP, "images", "pdf", "originals",
         "layout", "stats")


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
