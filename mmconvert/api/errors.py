"""How an API request fails: the item's failure (recorded, the run goes on) or the run's."""

from __future__ import annotations

from ..errors import ItemError, MMConvertError

API_STAGE = "generate"  # the stage a failed request is recorded under in skipped.jsonl


class ApiFailure(ItemError):
    """An item's request failed for good (after the tries). Recorded in skipped.jsonl whatever
    ``--on-error`` says; ``--retry-failed`` tries it again."""

    always_recorded = True
    kind = "failed"

    def __init__(self, reason: str, **kwargs):
        kwargs.setdefault("stage", API_STAGE)
        super().__init__(reason, **kwargs)


class ApiRefusal(ApiFailure):
    kind = "refused"


class ApiMalformed(ApiFailure):
    kind = "malformed"


class ApiFatal(MMConvertError):
    """A problem no item can get past (a rejected key, an unknown model): the run stops."""
