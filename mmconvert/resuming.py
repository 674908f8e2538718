"""Where a run folder stands against a selection, for render, chains and sweeps alike: the
ids it has done (``take_stock``: rows past a sharded run's shards cut, repeated rows removed, rows
outside the selection refused), the items changed at the source since they were made
(``changed``; ``refresh`` forgets them, so that they are made again) and the manifest put
back in the selection's order (``reorder``). The folder itself (its lock, its files, its
manifest) is ``runfolder.RunFolder``."""

from __future__ import annotations

from collections.abc import Collection

from .errors import RunFolderError
from .runfolder import RunFolder
from .shards import check_shards, is_sharded


def take_stock(folder: RunFolder, selected: Collection[str] | None
           ) -> tuple[int, set[str], set[str]]:
    """Where a run into this folder stands, from the manifest's ids (read a line at a
    time): in a sharded run, rows past the shards that hold them are cut (made again);
    rows of an id the manifest holds twice (two runs that once shared the folder) are
    removed, the first kept; a row of an item outside ``selected`` (when given) is
    refused. Returns how many repeated rows were removed, the ids that need no more
    work (in the manifest or skipped), and the ids the manifest holds."""
    ids = folder.manifest.ids()
    folder.shards_removed = 0
    if is_sharded(folder.path):
        # first, so that a pack task a killed attempt left running puts no shard in place
        # (``shards.pack``) once the shards are checked
        folder.clear_spools()
        whole, folder.shards_removed = check_shards(folder.path, ids, folder.manifest.lines)
        if whole < len(ids):
            folder.manifest.rewrite(folder.manifest.read()[:whole])
            ids = ids[:whole]
    seen: set[str] = set()
    repeated = 0
    for number, item_id in enumerate(ids, start=1):
        if selected is not None and item_id not in selected:
            raise RunFolderError(f"{folder.manifest.path} row {number}: item {item_id!r} is "
                                 "not in this run's selection; use --overwrite to start "
                                 "again")
        if item_id in seen:
            repeated += 1
        seen.add(item_id)
    if repeated:
        kept, first = [], set()
        for row in folder.manifest.read():
            if row.get("id") not in first:
                first.add(row.get("id"))
                kept.append(row)
        folder.manifest.rewrite(kept)
    return repeated, seen | {r["id"] for r in folder.skipped.read()}, seen


def changed(folder: RunFolder, current: dict[str, str]) -> list[str]:
    """The items whose source changed since this folder recorded them, in the order it
    did: a manifest row or a skip whose ``source_sha256`` is not the item's fingerprint in
    ``current`` (id -> ``Item.fingerprint``) now, and an item skipped at load that loads
    now. A row recorded before fingerprints (none) cannot tell, and is kept."""
    found: dict[str, None] = {}
    for record in [*folder.manifest.read(), *folder.skipped.read()]:
        item_id, recorded = record.get("id"), record.get("source_sha256")
        if item_id not in current:
            continue
        if (recorded is not None and recorded != current[item_id]) or (
                recorded is None and record.get("stage") == "load"):
            found[item_id] = None
    return list(found)


def refresh(folder: RunFolder, current: dict[str, str],
            on_change: str = "redraw") -> list[str]:
    """The items ``changed`` since this folder recorded them: with ``on_change``
    "refuse", a one-line error naming the first, changing nothing; else their records
    are removed (``forget``) so that the run makes them again. Returns their ids."""
    found = changed(folder, current)
    if found and on_change == "refuse":
        raise RunFolderError(
            f"{folder.path}: {len(found)} item(s) changed in the source since they were "
            f"drawn (the first: {found[0]}); nothing was changed: --on-change redraw "
            "draws them again, --overwrite starts the run again")
    if found:
        forget(folder, found)
    return found


def forget(folder: RunFolder, ids: list[str]) -> int:
    """Remove the records of ``ids`` (their manifest rows and skips), so that a resumed
    run makes them again; in a sharded run, the manifest is cut at the first of them (the
    shard that holds it, and every later one, are then removed by ``take_stock``). Returns
    how many manifest rows were removed."""
    gone = set(ids)
    rows = folder.manifest.read()
    if is_sharded(folder.path):
        first = next((n for n, row in enumerate(rows) if row.get("id") in gone), len(rows))
        kept = rows[:first]
    else:
        kept = [row for row in rows if row.get("id") not in gone]
    if len(kept) < len(rows):
        folder.manifest.rewrite(kept)
    skips = folder.skipped.read()
    if any(record.get("id") in gone for record in skips):
        left = [r for r in skips if r.get("id") not in gone]
        if left:
            folder.skipped.rewrite(left)
        else:  # as a run that skipped nothing leaves it: no file
            folder.skipped.path.unlink()
    return len(rows) - len(kept)


def reorder(folder: RunFolder, order: dict[str, int]) -> bool:
    """Put the manifest's rows in the order ``order`` gives their ids (the selection's),
    when they are not (a run that drew changed items again appended them last); the
    manifest is then the one a run from scratch writes. Returns whether it rewrote it."""
    ids = folder.manifest.ids()
    positions = [order.get(i, len(order)) for i in ids]
    if positions == sorted(positions):
        return False
    rows = folder.manifest.read()
    folder.manifest.rewrite(sorted(rows, key=lambda row: order.get(str(row.get("id")),
                                                                   len(order))))
    return True
