"""Agent parameter files: which strategy an agent plays and with which parameters.

A parameter file is TOML (or YAML, when PyYAML is installed)::

    strategy = "hybrid"   # a name of strategies.registry.STRATEGIES
    game = 1              # optional: the setting this set was tuned for
    margin = 0.25         # optional: seconds of the move limit kept back
    [params]              # the strategy's own parameters (its Params class)
    ab_fraction = 0.2

Everything is validated when the file is read: an unknown key or a bad value
is a ``ParamFileError`` naming the file, the key and what is allowed (the
range comes from the pydantic field constraints of the strategy's Params).
"""

from __future__ import annotations

import math
import tomllib
import typing
from pathlib import Path
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from strategies.base import StrategyParams
from strategies.registry import STRATEGIES

_SCALARS = (bool, int, float, str)


class ParamFileError(ValueError):
    """A parameter file that cannot be read or does not validate."""


class AgentParams(BaseModel):
    """The validated content of one parameter file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy: str
    game: int | None = Field(None, ge=1, le=4)
    margin: float | None = Field(None, ge=0, lt=3)
    params: dict[str, bool | int | float | str] = Field(default_factory=dict)

    def params_class(self) -> type[StrategyParams]:
        return STRATEGIES[self.strategy].Params

    def play_args(self, time_limit: float | None = None) -> list[str]:
        """``battlesheep play`` options for this set (strategy, params, margin)."""
        args = ["--strategy", self.strategy]
        for key, value in self.params.items():
            args += ["--param", f"{key}={format_value(value)}"]
        margin = self.margin
        if time_limit is not None:
            margin = fitted_margin(time_limit, margin)
        if margin is not None:
            args += ["--margin", f"{margin:g}"]
        return args


def format_value(value: bool | int | float | str) -> str:
    """A parameter value as ``--param`` takes it (pydantic parses it back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


DEFAULT_MARGIN = 0.25


def fitted_margin(time_limit: float, margin: float | None) -> float:
    """The margin for a limit: the file's (or the client's default), but never more than
    30% of the limit, so that tiny test limits still leave time to think."""
    wanted = DEFAULT_MARGIN if margin is None else margin
    return round(min(wanted, 0.3 * time_limit), 4)


def allowed(field: FieldInfo) -> str:
    """What a field accepts, in words: its type and range (from pydantic's constraints)."""
    annotation = field.annotation
    if typing.get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(annotation))
    kind = getattr(annotation, "__name__", str(annotation))
    low = high = ""
    for meta in field.metadata:
        if isinstance(meta, Ge):
            low = f"{meta.ge} <= "
        elif isinstance(meta, Gt):
            low = f"{meta.gt} < "
        elif isinstance(meta, Le):
            high = f" <= {meta.le}"
        elif isinstance(meta, Lt):
            high = f" < {meta.lt}"
    return f"{low}{kind}{high}" if low or high else kind


def field_range(field: FieldInfo) -> tuple[float, float]:
    """The closed numeric range of a field (infinite where it is open-ended)."""
    low, high = -math.inf, math.inf
    for meta in field.metadata:
        if isinstance(meta, Ge):
            low = float(meta.ge)  # type: ignore[arg-type]
        elif isinstance(meta, Gt):
            low = float(meta.gt)  # type: ignore[arg-type]
        elif isinstance(meta, Le):
            high = float(meta.le)  # type: ignore[arg-type]
        elif isinstance(meta, Lt):
            high = float(meta.lt)  # type: ignore[arg-type]
    return low, high


def _problems(where: str, model: type[BaseModel], exc: ValidationError, prefix: str = "") -> str:
    lines = []
    for err in exc.errors():
        key = prefix + ".".join(str(p) for p in err["loc"])
        name = str(err["loc"][0]) if err["loc"] else ""
        if err["type"] == "extra_forbidden":
            known = ", ".join(sorted(model.model_fields))
            lines.append(f"{where}: unknown key {key!r}; allowed keys: {known}")
        elif name in model.model_fields:
            rule = allowed(model.model_fields[name])
            got = err.get("input")
            lines.append(
                f"{where}: key {key!r} = {got!r} is not allowed ({err['msg']}); allowed: {rule}"
            )
        else:
            lines.append(f"{where}: {key or 'file'}: {err['msg']}")
    return "; ".join(lines)


def validate_params(data: dict[str, Any], where: str) -> AgentParams:
    """An ``AgentParams`` from parsed file content; ``where`` names the file in errors."""
    if not isinstance(data.get("strategy"), str):
        known = ", ".join(sorted(STRATEGIES))
        raise ParamFileError(f"{where}: key 'strategy' is missing or not a string; one of {known}")
    if data["strategy"] not in STRATEGIES:
        known = ", ".join(sorted(STRATEGIES))
        raise ParamFileError(
            f"{where}: key 'strategy' = {data['strategy']!r} is unknown; allowed: {known}"
        )
    try:
        agent = AgentParams.model_validate(data)
    except ValidationError as exc:
        raise ParamFileError(_problems(where, AgentParams, exc)) from None
    params_class = agent.params_class()
    try:
        params_class.model_validate(agent.params)
    except ValidationError as exc:
        raise ParamFileError(_problems(where, params_class, exc, prefix="params.")) from None
    return agent


def read_data(path: Path) -> dict[str, Any]:
    """The raw mapping of a TOML or YAML file."""
    where = f"parameter file {str(path)!r}"
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ParamFileError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise ParamFileError(f"{where}: YAML files need PyYAML (pip install pyyaml)") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ParamFileError(f"{where}: not valid YAML: {exc}") from None
    else:
        try:
            data = tomllib.loads(text.decode())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ParamFileError(f"{where}: not valid TOML: {exc}") from None
    if not isinstance(data, dict):
        raise ParamFileError(f"{where}: must be a table of keys, not {type(data).__name__}")
    return data


def load_agent_params(path: str | Path) -> AgentParams:
    p = Path(path)
    return validate_params(read_data(p), f"parameter file {str(p)!r}")


def dump_toml(agent: AgentParams, comment: str = "") -> str:
    """The TOML text of a parameter set (what ``battlesheep tune`` writes)."""
    lines = [f"# {line}" for line in comment.splitlines()]
    lines.append(f'strategy = "{agent.strategy}"')
    if agent.game is not None:
        lines.append(f"game = {agent.game}")
    if agent.margin is not None:
        lines.append(f"margin = {agent.margin!r}")
    lines.append("")
    lines.append("[params]")
    for key, value in agent.params.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        else:
            text = repr(value)
        lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"
