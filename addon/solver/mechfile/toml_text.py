"""TOML text of the values a Mechanism holds: how write.py writes them and how messages quote what came."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..model import Curve, Motor


def show(value: object) -> str:
    """TOML text of a value (also how messages quote what came)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, float):
        return repr(float(value))  # shortest text giving the same double (inf, nan are TOML too)
    if isinstance(value, Curve):
        return show(dataclasses.asdict(value))
    if isinstance(value, Motor):
        return show({k: v for k, v in dataclasses.asdict(value).items() if v is not None})
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)


def brief(value: object, limit: int = 160) -> str:
    text = show(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def toml_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
