"""Parameter files: TOML tables of strategy parameters, for tuned parameter sets.

A file holds ``key = value`` pairs at the top level (the parameters of one
strategy) or one table per strategy name::

    [hybrid]
    ab_fraction = 0.2
    c_puct = 1.1
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from strategies.base import ParameterError

_SCALARS = (bool, int, float, str)


def load_params(path: str | Path, strategy: str | None = None) -> dict[str, Any]:
    """The parameters in ``path``; with ``strategy``, that strategy's table if the file
    has one (top-level scalar keys apply to every strategy).

    Raises ``ParameterError`` naming the file (and the key) on any problem.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ParameterError(f"parameter file {str(p)!r}: cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"parameter file {str(p)!r}: not valid TOML: {exc}") from None
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            continue
        if not isinstance(value, _SCALARS):
            raise ParameterError(
                f"parameter file {str(p)!r}: key {key!r} must be a number, boolean or "
                f"string, not {type(value).__name__}"
            )
        out[key] = value
    if strategy is not None:
        table = data.get(strategy)
        if table is not None:
            if not isinstance(table, dict):
                raise ParameterError(f"parameter file {str(p)!r}: {strategy!r} must be a table")
            for key, value in table.items():
                if not isinstance(value, _SCALARS):
                    raise ParameterError(
                        f"parameter file {str(p)!r}: key {strategy}.{key} must be a number, "
                        f"boolean or string, not {type(value).__name__}"
                    )
                out[key] = value
    return out
