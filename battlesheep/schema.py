"""``battlesheep schema``: the JSON Schema of every WebSocket / MQTT message."""

from __future__ import annotations

import argparse
import json
from typing import Any

from protocol.msgpack_codec import message_schema


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "schema",
        help="print the JSON Schema of the messages (WebSocket frames, MQTT payloads)",
        description="The messages of the ws and mqtt transports, one msgpack map each; "
        "the schema is generated from the same pydantic models the TCP codec uses. It "
        "includes MQTT's token handshake (hello with a nonce, challenge, proof) and the "
        "seq and mac every later MQTT frame carries with a token: the token itself is "
        "never sent over MQTT.",
    )
    p.add_argument("--compact", action="store_true", help="one line instead of indented JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    indent = None if args.compact else 2
    print(json.dumps(message_schema(), indent=indent, sort_keys=False))
    return 0
