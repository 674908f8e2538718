"""Seeds derive from (run seed, stage, key) by hashing, never from global random state, so a
choice is the same on every machine, in every process and in any order of work."""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, stage: str, key: str = "") -> int:
    digest = hashlib.sha256(f"{seed}\x1f{stage}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def rng(seed: int, stage: str, key: str = "") -> random.Random:
    return random.Random(derive_seed(seed, stage, key))
