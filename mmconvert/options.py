"""What every option model shares: unknown keys are refused (with a did-you-mean where the
message is made, ``config.build``), and so are NaN and the infinities, which no option means
(``--rotate nan`` reached Pillow as a NaN angle)."""

from __future__ import annotations

from pydantic import ConfigDict

OPTIONS = ConfigDict(extra="forbid", allow_inf_nan=False)
