"""TOML text of a parsed TOML document, so a variant's changed document can be handed to the ordinary loaders.

Owns only the document layout (plain values first, then [tables] and [[arrays of tables]] under dotted
headers); values are written by mechfile/toml_text.py's `show`. `tomllib.loads(dumps(d)) == d` for every
document tomllib reads from our files (tests/farm/test_variants.py checks every preset).
"""

from __future__ import annotations

from ..solver.mechfile.toml_text import show, toml_string

BARE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _key(name: str) -> str:
    return name if name and set(name) <= BARE else toml_string(name)


def _is_table_array(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _body(table: dict, header: str, out: list[str]) -> None:
    """Append `table`'s plain values, then its sub-tables and arrays of tables, to `out`."""
    for name, value in table.items():
        if not isinstance(value, dict) and not _is_table_array(value):
            out.append(f"{_key(name)} = {show(value)}")
    for name, value in table.items():
        full = f"{header}.{_key(name)}" if header else _key(name)
        if isinstance(value, dict):
            out.append(f"\n[{full}]")
            _body(value, full, out)
        elif _is_table_array(value):
            for entry in value:
                out.append(f"\n[[{full}]]")
                _body(entry, full, out)


def dumps(document: dict) -> str:
    """TOML text that reads back equal to `document`."""
    out: list[str] = []
    _body(document, "", out)
    return "\n".join(out) + "\n"
