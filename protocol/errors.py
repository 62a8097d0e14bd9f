"""The one exception of the package: a value the wire format does not allow."""

from __future__ import annotations


class ProtocolError(ValueError):
    """Bytes or a message that break the wire format.

    ``field`` is the message field at fault (``"direction"``, ``"map"``, ``"code"``,
    ``"id_package"``, ``"buffer"``...) and ``value`` the offending value, so a caller
    can log or count the failure without parsing the text.
    """

    def __init__(self, field: str, value: object, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        # repr for strings only: "y: 'a' ..." shows it was text, while ints read naturally.
        shown = repr(value) if isinstance(value, str | bytes) else value
        super().__init__(f"{field}: {shown} {reason}")

    def __reduce__(self) -> tuple[type[ProtocolError], tuple[str, object, str]]:
        # The default pickling replays args=(message,) into __init__, which takes three.
        return (type(self), (self.field, self.value, self.reason))
