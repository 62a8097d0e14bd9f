"""SPSA: tuning numeric parameters from noisy game results, as fishtest tunes engines.

Simultaneous perturbation stochastic approximation (Spall 1992) moves all
parameters at once: each iteration draws a random sign per parameter, plays
``theta + c_k * delta`` against ``theta - c_k * delta``, and steps ``theta``
towards the side that won, by ``a_k * c_k * result * delta`` (fishtest's
form: ``result`` in [-1, 1] is how much the plus side won by). The gains
shrink as ``a_k = a * ((A + 1) / (A + k + 1)) ** alpha`` and
``c_k = c / (k + 1) ** gamma`` with Spall's exponents, so ``a`` reads as "a
clean sweep of the first iteration moves ``a`` perturbations". Parameters
are searched in units of their range, so one ``step`` of the space file is
the first perturbation of that parameter.

Space file (TOML), one table per parameter of the strategy::

    [exploration]
    min = 0.2
    max = 2.0
    step = 0.2        # the first perturbation, in the parameter's own units
    # integer = true  # default: whether the strategy's field is an int
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from strategies.base import ConfigError
from strategies.params import AgentParams, allowed, field_range, read_data

ALPHA = 0.602
GAMMA = 0.101


class Dimension(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    min: float
    max: float
    step: float = Field(gt=0)
    integer: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> Dimension:
        if not self.min < self.max:
            raise ValueError(f"min ({self.min}) must be below max ({self.max})")
        if self.step > self.max - self.min:
            raise ValueError(f"step ({self.step}) is wider than the range {self.min}..{self.max}")
        return self

    def to_unit(self, value: float) -> float:
        return (value - self.min) / (self.max - self.min)

    def from_unit(self, unit: float) -> float | int:
        value = self.min + min(1.0, max(0.0, unit)) * (self.max - self.min)
        return round(value) if self.integer else round(value, 6)


def load_space(path: str | Path, agent: AgentParams) -> list[Dimension]:
    """The dimensions of a space file, checked against the agent's strategy parameters."""
    p = Path(path)
    where = f"space file {str(p)!r}"
    data = read_data(p, "space file")
    fields = agent.params_class().model_fields
    numeric = sorted(n for n, f in fields.items() if f.annotation in (int, float) and n != "seed")
    dims = []
    for name, table in data.items():
        if name not in numeric:
            raise ConfigError(
                f"{where}: {name!r} is not a numeric parameter of {agent.strategy!r};"
                f" allowed: {', '.join(numeric)}"
            )
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: {name!r} must be a table with min, max and step")
        info = fields[name]
        table = {"integer": info.annotation is int, **table}
        try:
            dim = Dimension(name=name, **table)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in e['loc']) or 'table'}: {e['msg']}" for e in exc.errors()
            )
            raise ConfigError(f"{where}: [{name}]: {problems}") from None
        low, high = field_range(info)
        if dim.min < low or dim.max > high:
            raise ConfigError(
                f"{where}: [{name}] range {dim.min}..{dim.max} leaves what the strategy"
                f" allows: {allowed(info)}"
            )
        dims.append(dim)
    if not dims:
        raise ConfigError(f"{where}: names no parameter to tune")
    return dims


@dataclass
class Spsa:
    dims: list[Dimension]
    start: Mapping[str, float]
    a: float = 2.0
    big_a: float = 5.0
    seed: int | None = None
    k: int = 0
    theta: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.theta = []
        for d in self.dims:
            value = self.start.get(d.name)
            unit = 0.5 if value is None else d.to_unit(float(value))
            self.theta.append(min(1.0, max(0.0, unit)))

    def c_k(self, dim: Dimension) -> float:
        return float(dim.step / (dim.max - dim.min) / (self.k + 1) ** GAMMA)

    def a_k(self) -> float:
        return float(self.a * ((self.big_a + 1) / (self.big_a + self.k + 1)) ** ALPHA)

    def ask(self) -> tuple[list[int], dict[str, float | int], dict[str, float | int]]:
        """Signs and the plus and minus parameter values of the next iteration."""
        delta = [self.rng.choice((-1, 1)) for _ in self.dims]
        plus, minus = {}, {}
        for d, t, s in zip(self.dims, self.theta, delta, strict=True):
            c = self.c_k(d)
            plus[d.name] = d.from_unit(t + c * s)
            minus[d.name] = d.from_unit(t - c * s)
        return delta, plus, minus

    def tell(self, delta: list[int], result: float) -> None:
        """``result`` in [-1, 1]: how much the plus side beat the minus side."""
        if not math.isfinite(result):
            raise ValueError(f"SPSA result must be finite, not {result}")
        a = self.a_k()
        for i, (d, s) in enumerate(zip(self.dims, delta, strict=True)):
            self.theta[i] = min(1.0, max(0.0, self.theta[i] + a * self.c_k(d) * result * s))
        self.k += 1

    def values(self) -> dict[str, float | int]:
        return {d.name: d.from_unit(t) for d, t in zip(self.dims, self.theta, strict=True)}
