"""Parameter files: which strategy an agent plays, with which parameters and margin.

The one format that ``battlesheep play --params-file``, ``build``, ``bench
strength --params-file``, ``tournament`` entrants and ``tune`` read. TOML (or
YAML, when PyYAML is installed)::

    strategy = "hybrid"   # a name of strategies.registry.STRATEGIES
    game = 1              # optional: the setting this set was tuned for
    margin = 0.06         # optional: seconds of the move limit kept back
    [params]              # the strategy's own parameters (its Params class)
    ab_fraction = 0.2

Everything is validated when the file is read: an unknown key, a bad value,
a value that is not a finite number (``inf``, ``nan``) or nesting deeper than
``MAX_NESTING`` is a ``ConfigError`` naming the file, the key and what is
allowed (the range comes from the pydantic field constraints of the
strategy's Params).

``ConfigError`` is also the error of every other bad user configuration
(arena input files and seats, tournament entrants and options): it lives here,
in a module that arena, tournament and the client can all import, and the
registry of strategies is imported only when a file is validated, so that
importing the error type stays light.
"""

from __future__ import annotations

import math
import re
import tomllib
import typing
from pathlib import Path
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from strategies.base import ConfigError, StrategyParams

MAX_NESTING = 8
"""Tables and arrays nested deeper than this are refused (the format needs two levels)."""

Value = bool | int | float | str


class AgentParams(BaseModel):
    """The validated content of one parameter file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy: str
    game: int | None = Field(None, ge=1, le=4)
    margin: float | None = Field(None, ge=0, lt=3)
    params: dict[str, Value] = Field(default_factory=dict)

    def params_class(self) -> type[StrategyParams]:
        from strategies.registry import STRATEGIES

        return STRATEGIES[self.strategy].Params

    def params_for(self, strategy: str) -> dict[str, Value]:
        """The parameters, for a caller that plays ``strategy``: ConfigError if the file is
        for another strategy (its parameters would not fit)."""
        if strategy != self.strategy:
            raise ConfigError(
                f"the parameter file is for strategy {self.strategy!r}, not {strategy!r}"
            )
        return dict(self.params)

    def play_args(self) -> list[str]:
        """``battlesheep play`` options for this set (strategy, params, and the file's margin)."""
        args = ["--strategy", self.strategy]
        for key, value in self.params.items():
            args += ["--param", f"{key}={format_value(value)}"]
        if self.margin is not None:
            args += ["--margin", repr(self.margin)]
        return args


def format_value(value: Value) -> str:
    """A parameter value as ``--param`` takes it (pydantic parses it back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


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
    """An ``AgentParams`` from the content ``read_data`` parsed; ``where`` names the file."""
    from strategies.registry import STRATEGIES

    known = ", ".join(sorted(STRATEGIES))
    if not isinstance(data.get("strategy"), str):
        raise ConfigError(f"{where}: key 'strategy' is missing or not a string; one of {known}")
    if data["strategy"] not in STRATEGIES:
        got = data["strategy"]
        raise ConfigError(f"{where}: key 'strategy' = {got!r} is unknown; allowed: {known}")
    try:
        agent = AgentParams.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_problems(where, AgentParams, exc)) from None
    params_class = agent.params_class()
    try:
        params_class.model_validate(agent.params)
    except ValidationError as exc:
        raise ConfigError(_problems(where, params_class, exc, prefix="params.")) from None
    return agent


def check_values(data: dict[str, Any], where: str) -> None:
    """ConfigError naming the key if a value is a non-finite float or nests too deeply.

    Iterative, so that a table nested thousands of levels deep (dotted TOML headers)
    is refused instead of overflowing the stack later.
    """
    stack: list[tuple[tuple[str, ...], Any]] = [((str(k),), v) for k, v in data.items()]
    while stack:
        path, value = stack.pop()
        if len(path) > MAX_NESTING:
            key = _key(path[: MAX_NESTING + 1])
            raise ConfigError(
                f"{where}: key {key + '...'!r} is nested more than {MAX_NESTING} levels deep"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(
                f"{where}: key {_key(path)!r} = {value!r} is not allowed:"
                " numbers must be finite (no inf or nan)"
            )
        if isinstance(value, dict):
            stack.extend(((*path, str(k)), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, f"[{i}]"), v) for i, v in enumerate(value))


def _key(path: tuple[str, ...]) -> str:
    """``params.w[0][1]``: a key path as the messages name it."""
    return "".join(p if p.startswith("[") or i == 0 else "." + p for i, p in enumerate(path))


_KEY = re.compile(r"""\s*([\w.\-"' ]+?)\s*[=:]""")


def _deep_key(text: str) -> str:
    """Best effort, for the message: the key whose value opens more than MAX_NESTING brackets."""
    depth, key = 0, "?"
    for line in text.splitlines():
        match = _KEY.match(line)
        if depth == 0 and match:
            key = match.group(1).strip("\"' ")
        for char in re.sub(r"\"[^\"]*\"|'[^']*'", "", line.split("#", 1)[0]):
            depth += (char in "[{") - (char in "]}")
            if depth > MAX_NESTING:
                return key
    return key


def _parse(text: bytes, path: Path, where: str) -> Any:
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise ConfigError(f"{where}: YAML files need PyYAML (pip install pyyaml)") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    try:
        return tomllib.loads(text.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None


def read_data(path: Path, what: str = "parameter file") -> dict[str, Any]:
    """The raw mapping of a TOML or YAML file, its values finite and shallowly nested."""
    where = f"{what} {str(path)!r}"
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    try:
        data = _parse(text, path, where)
    except RecursionError:
        key = _deep_key(text.decode(errors="replace"))
        raise ConfigError(
            f"{where}: key {key!r} is nested more than {MAX_NESTING} levels deep"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: must be a table of keys, not {type(data).__name__}")
    check_values(data, where)
    return data


def load_agent_params(path: str | Path) -> AgentParams:
    """The parameter file at ``path``, validated (the one loader of parameter files)."""
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
