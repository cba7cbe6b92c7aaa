"""Malformed variants of a valid TOML input file, for tools/fuzz_files.py.

Owns the mutation classes and how each one damages a file: at the byte level (damage, non-UTF-8,
truncation, a duplicated line) or on the parsed document (huge numbers, deep nesting, NaN/inf, type
swaps, deleted and unknown keys, wrong references, extreme step-like values), written back as TOML.
Each mutation is a function of (text, document, rng) returning the mutant's bytes and a few words on
what changed; nothing here runs the command line.
"""

from __future__ import annotations

import json
import math
import random
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from addon.solver.tomlfile import MAX_MAGNITUDE

BIG_INT = "1" + "0" * 400  # a TOML integer far beyond the largest float
DEEP = "[" * 5000 + "]" * 5000  # nested far deeper than any reader's recursion limit
NON_FINITE = ("nan", "inf", "-inf", "+nan")
HUGE = ("1e308", "-1e308", "1.7976931348623157e308", "1e300", "9223372036854775807", "-9223372036854775808")
# Keys whose values are steps, times, counts or sizes: where zero, negative and huge numbers bite.
STEP_LIKE = re.compile(r"^(dt|dt_min|dt_max|steps|frame|frames|mass|radius|size|inertia|times|tolerance|"
                       r"clearance|body_radius|gain|stiffness|damping|rest_length|effort|lower|upper|"
                       r"wheelbase|track|wheel_radius|.*mass|.*length|.*radius)$")
STEP_VALUES = ("0", "-1", "-0.0", "1e-300", "5e-324", "1e300", "1000000000000000000", "-1000000000000000000",
               "4294967297")
TYPE_SWAPS = ('"x"', '""', "7", "0.5", "true", "[]", "[1, 2]", '["a", "b"]', "{}", "{a = 1}",
              "1979-05-27T07:32:00Z", "07:32:00", "[[1, 2], [3]]", '[1, "a"]')
REFERENCES = ('"world"', '"no_such_name"', '"missing.toml"', '"."', '"../"', '"/dev/null"', '"/etc"',
              '"presets"', '"x/../../y.toml"', '"\\u0000"', '"a\\u0000.toml"', '"' + "n" * 5000 + '"',
              '"' + "n" * 5000 + '.toml"')


class Damage(NamedTuple):
    """What one mutation did: a few words, the mutant's bytes, and whether a value makes it invalid."""

    detail: str
    data: bytes
    invalid: bool = False


class Raw(str):
    """TOML text written as it is (a value the document model cannot hold, such as DEEP or BIG_INT)."""


@dataclass(frozen=True)
class Mutant:
    kind: str  # the mutation class
    detail: str  # what changed, in a few words
    data: bytes
    invalid: bool  # invalid by construction: a run that does not refuse it (exit 2) is a bug


# ----------------------------------------------------------------------------------------------
# writing a document back as TOML (inline tables and arrays, so any nesting writes the same way)

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def toml_value(value: object) -> str:
    """TOML text of one value."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return value.isoformat()  # dates and times as tomllib read them


def toml_document(document: dict) -> bytes:
    """A document as TOML: one `key = value` line per top-level key."""
    return "".join(f"{_key(k)} = {toml_value(v)}\n" for k, v in document.items()).encode()


# ----------------------------------------------------------------------------------------------
# places in a document

Path = tuple  # keys and list indices from the top


def _places(node: object, path: Path = ()) -> list[tuple[Path, object]]:
    """Every (path, value) below `node`, the containers included."""
    out: list[tuple[Path, object]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out.append((path + (key,), value))
        out.extend(_places(value, path + (key,)))
    return out


def _replaced(document: dict, path: Path, value: object) -> dict:
    """A copy of `document` with the value at `path` replaced (None deletes a table key)."""
    copy = json.loads(json.dumps(document, default=str))  # documents of the presets are JSON-safe but dates
    node = copy
    for key in path[:-1]:
        node = node[key]
    if value is None and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return copy


def _pick(rng: random.Random, places: list[tuple[Path, object]], what: str) -> tuple[Path, object]:
    if not places:
        raise LookupError(f"no {what} in this file")
    return rng.choice(places)


def _numbers(document: dict) -> list[tuple[Path, object]]:
    return [(p, v) for p, v in _places(document) if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _where(path: Path) -> str:
    return ".".join(str(k) for k in path)


# ----------------------------------------------------------------------------------------------
# the mutations: (text, document, rng) -> (detail, bytes)

def _byte_damage(text: str, document: dict, rng: random.Random) -> Damage:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data))
        op = rng.choice(("flip", "insert", "delete"))
        if op == "flip":
            data[at] = rng.randrange(256)
        elif op == "insert":
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        else:
            del data[at:at + rng.randint(1, 16)]
    return Damage("random bytes flipped, inserted or deleted", bytes(data))


def _not_utf8(text: str, document: dict, rng: random.Random) -> Damage:
    choice = rng.randrange(4)
    if choice == 0:
        cut = rng.randrange(len(text))
        return Damage("bytes 0xff 0xfe inserted", text[:cut].encode() + b"\xff\xfe" + text[cut:].encode())
    if choice == 1:
        return Damage("UTF-16 encoded", text.encode("utf-16"))
    if choice == 2:
        return Damage("Latin-1 e-acute in a comment", ("# caf\u00e9\n" + text).encode("latin-1", "replace"))
    return Damage("a lone surrogate's bytes", text.encode() + b"\n# \xed\xa0\x80\n")


def _truncated(text: str, document: dict, rng: random.Random) -> Damage:
    data = text.encode()
    cut = rng.randrange(len(data))
    return Damage(f"cut after byte {cut} of {len(data)}", data[:cut])


def _duplicated_key(text: str, document: dict, rng: random.Random) -> Damage:
    lines = text.split("\n")
    assignments = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_][\w-]*\s*=", line)]
    i = rng.choice(assignments)
    return Damage(f"line {i + 1} written twice", "\n".join(lines[:i + 1] + lines[i:]).encode())


def _value_at_number(document: dict, rng: random.Random, values: tuple[str, ...]) -> Damage:
    path, _ = _pick(rng, _numbers(document), "number")
    value = rng.choice(values)
    return Damage(f"{_where(path)} = {_shown(value)}", toml_document(_replaced(document, path, Raw(value))),
                  invalid_number(value))


def _shown(value: str) -> str:
    return value if len(value) <= 30 else f"{value[:12]}...({len(value)} characters)"


def _huge_number(text: str, document: dict, rng: random.Random) -> Damage:
    return _value_at_number(document, rng, HUGE + (BIG_INT, "-" + BIG_INT))


def _deep_nesting(text: str, document: dict, rng: random.Random) -> Damage:
    path, _ = _pick(rng, _places(document), "value")
    mutated = toml_document(_replaced(document, path, Raw(DEEP)))
    return Damage(f"{_where(path)} nested {len(DEEP) // 2} deep", mutated)


def _non_finite(text: str, document: dict, rng: random.Random) -> Damage:
    return _value_at_number(document, rng, NON_FINITE)


def _type_swap(text: str, document: dict, rng: random.Random) -> Damage:
    path, _ = _pick(rng, _places(document), "value")
    value = rng.choice(TYPE_SWAPS)
    return Damage(f"{_where(path)} = {value}", toml_document(_replaced(document, path, Raw(value))))


def _deleted_key(text: str, document: dict, rng: random.Random) -> Damage:
    keyed = [(p, v) for p, v in _places(document) if isinstance(p[-1], str)]
    path, _ = _pick(rng, keyed, "key")
    return Damage(f"{_where(path)} deleted", toml_document(_replaced(document, path, None)))


def _unknown_key(text: str, document: dict, rng: random.Random) -> Damage:
    tables = [((), document)] + [(p, v) for p, v in _places(document) if isinstance(v, dict)]
    path, table = rng.choice(tables)
    name = rng.choice(("bogus", "Mass", "dt ", "type2", "\u00e9t\u00e9"))
    grown = dict(table, **{name: 1.0})
    mutated = grown if not path else _replaced(document, path, grown)
    return Damage(f"{_where(path) or 'top level'} gains key {name!r}", toml_document(mutated))


def _wrong_reference(text: str, document: dict, rng: random.Random) -> Damage:
    strings = [(p, v) for p, v in _places(document) if isinstance(v, str)]
    path, _ = _pick(rng, strings, "string")
    value = rng.choice(REFERENCES)
    return Damage(f"{_where(path)} = {value[:30]}", toml_document(_replaced(document, path, Raw(value))))


def _step_like(text: str, document: dict, rng: random.Random) -> Damage:
    """Zero, negative, tiny and huge values where a step, count, time or size is expected."""
    places = [(p, v) for p, v in _numbers(document) if any(isinstance(k, str) and STEP_LIKE.match(k) for k in p)]
    path, _ = _pick(rng, places or _numbers(document), "number")
    value = rng.choice(STEP_VALUES)
    return Damage(f"{_where(path)} = {value}", toml_document(_replaced(document, path, Raw(value))),
                  invalid_number(value))


def _list_length(text: str, document: dict, rng: random.Random) -> Damage:
    lists = [(p, v) for p, v in _places(document) if isinstance(v, list)]
    path, value = _pick(rng, lists, "list")
    changed = value[:-1] if value and rng.random() < 0.5 else value + (value[-1:] or [0.0])
    return Damage(f"{_where(path)} of {len(changed)} items", toml_document(_replaced(document, path, changed)))


# Classes whose every mutant is invalid by construction.
ALWAYS_INVALID = frozenset({"not UTF-8", "duplicated key", "deep nesting", "unknown key"})


def invalid_number(text: str) -> bool:
    """Whether TOML number `text` is invalid in any field: NaN, or finite beyond the files' +-MAX_MAGNITUDE
    (an integer no float holds included). Infinity is a valid joint or control limit, so it is not here."""
    value = float(text)  # an integer literal of 400 digits reads as inf here
    integer = text.lstrip("+-").isdigit()
    return math.isnan(value) or abs(value) > MAX_MAGNITUDE and (math.isfinite(value) or integer)

MUTATIONS: dict[str, Callable[[str, dict, random.Random], Damage]] = {
    "byte damage": _byte_damage,
    "not UTF-8": _not_utf8,
    "truncated": _truncated,
    "duplicated key": _duplicated_key,
    "huge number": _huge_number,
    "deep nesting": _deep_nesting,
    "NaN or inf": _non_finite,
    "type swap": _type_swap,
    "deleted key": _deleted_key,
    "unknown key": _unknown_key,
    "wrong reference": _wrong_reference,
    "zero, negative or huge step-like value": _step_like,
    "list length": _list_length,
}


def mutant(kind: str, text: str, rng: random.Random) -> Mutant:
    """One mutant of the valid TOML `text` of class `kind` (a key of MUTATIONS)."""
    damage = MUTATIONS[kind](text, tomllib.loads(text), rng)
    return Mutant(kind, damage.detail, damage.data, kind in ALWAYS_INVALID or damage.invalid)
