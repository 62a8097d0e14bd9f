"""Strategies by name, as ``--strategy NAME`` and match seats ``NAME:key=value`` use them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strategies.base import ParameterError, Strategy, StrategyParams
from strategies.baselines import GreedyStrategy, RandomStrategy
from strategies.hybrid import HybridStrategy
from strategies.yardsticks import FlatMcStrategy, SeedlikeStrategy, UctStrategy

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls
    for cls in (
        RandomStrategy,
        GreedyStrategy,
        SeedlikeStrategy,
        UctStrategy,
        FlatMcStrategy,
        HybridStrategy,
    )
}
DEFAULT_STRATEGY = "hybrid"


def make_strategy(name: str, params: Mapping[str, Any] | None = None) -> Strategy:
    return strategy_class(name)(params)


def check_params(name: str, params: Mapping[str, Any] | None = None) -> StrategyParams:
    """The validated parameters of strategy ``name``, without making the strategy (which
    may start worker processes); ParameterError as ``make_strategy`` raises it."""
    return strategy_class(name).validated(params)


def strategy_class(name: str) -> type[Strategy]:
    try:
        return STRATEGIES[name]
    except KeyError:
        known = ", ".join(sorted(STRATEGIES))
        raise ParameterError(f"unknown strategy {name!r}; known: {known}") from None


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``["key=value", ...]`` from the command line; values are validated by the strategy."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ParameterError(f"parameter {pair!r} is not of the form key=value")
        params[key.strip()] = value.strip()
    return params


def parse_seat(spec: str) -> tuple[str, dict[str, str]]:
    """``"name:key=value:key=value"`` -> (name, params). Used by match seats."""
    name, *pairs = spec.split(":")
    return name.strip(), parse_params([p for p in pairs if p])
