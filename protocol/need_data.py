"""The decoders' answer when the buffered bytes do not yet hold a whole frame."""

from __future__ import annotations

import enum
from typing import Final


class NeedData(enum.Enum):
    """Type of ``NEED_DATA``; a one-member enum so that ``is NEED_DATA`` narrows for mypy."""

    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = NeedData.NEED_DATA
