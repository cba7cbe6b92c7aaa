"""Reading a TOML input file so that no content can crash its reader: the one reader of input files.

Owns `read_toml`, `parse_toml` (text given in memory) and `TomlFileError`. A file is read as bytes,
decoded as UTF-8 and parsed; the parsed values are then checked so the loaders above never meet what
they would crash on: tables and arrays nested deeper than MAX_NESTING, integers beyond the float range
and finite numbers beyond +-MAX_MAGNITUDE (infinities and NaN are left to the loaders, which name
them). Every message names the file, and the field for a value (dotted path, list items as [i]).
Mechanism files (mechfile/read.py), shot files (shots/) and the command line's input checks
(cli_input.py) all read through here, so a file that one of them names, such as a shot's vehicle or
mechanism, is held to the same checks as the file given.
"""

from __future__ import annotations

import math
import sys
import tomllib
from pathlib import Path

MAX_NESTING = 64  # TOML tables and arrays nested deeper than this are not a Symplex file
# The largest magnitude of a number: no quantity of a scene in SI units comes near, and squares and products
# of such numbers stay far from overflow (a track of 1e300 m overflowed a car's inertia).
MAX_MAGNITUDE = 1e15


class TomlFileError(ValueError):
    """A file that cannot be read as a Symplex TOML input; the message names the file (and field)."""


def read_toml(path: str | Path, what: str = "file") -> dict:
    """The parsed TOML of `path`, a `what` ("mechanism file", "shot file") in messages.

    Raises
    ------
    TomlFileError
        The file is missing, not a regular file (a directory, device or pipe: reading a pipe could wait
        for ever), unreadable, not UTF-8, or its text fails `parse_toml`.
    """
    path = Path(path)
    check_regular_file(path, what)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TomlFileError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TomlFileError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                            f"the {what} must be a TOML text file") from None
    return parse_toml(text, str(path))


def check_regular_file(path: Path, what: str) -> None:
    """TomlFileError unless `path` is an existing regular file (following links)."""
    try:
        regular, exists, folder = path.is_file(), path.exists(), path.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, a NUL character, a folder that cannot be searched
        raise TomlFileError(f"{str(path)[:200]!r}: not a usable file name for the {what}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    if regular:
        return
    if not exists:
        raise TomlFileError(f"{path}: {what} not found")
    if folder:
        raise TomlFileError(f"{path}: is a directory; give the {what} itself")
    raise TomlFileError(f"{path}: not a regular file (a device or pipe); give the {what} itself")


def parse_toml(text: str, source: str) -> dict:
    """The parsed TOML `text`; `source` names it in messages.

    Raises
    ------
    TomlFileError
        The text is not TOML, nests more than MAX_NESTING deep, holds an integer no float can hold or a
        finite number beyond +-MAX_MAGNITUDE.
    """
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlFileError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise TomlFileError(f"{source}: arrays or tables nested too deeply to read "
                            f"(at most {MAX_NESTING} levels)") from None
    except ValueError as exc:  # an integer literal beyond Python's digit limit
        raise TomlFileError(f"{source}: not readable TOML: {str(exc).split(';')[0]}") from None
    _check_values(source, parsed)
    return parsed


def field_name(keys: tuple) -> str:
    """The dotted name of a value: ('body', 0, 'mass') -> 'body[0].mass'."""
    return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else str(k)) for i, k in enumerate(keys))


def _check_values(source: str, data: dict) -> None:
    """Nesting depth and float range of every value (iteratively, so depth cannot exhaust the stack)."""
    stack: list[tuple[tuple, object]] = [((), data)]
    while stack:
        keys, value = stack.pop()
        if len(keys) > MAX_NESTING:
            raise TomlFileError(f"{source}: field '{field_name(keys[:3])}...' is nested more than "
                                f"{MAX_NESTING} levels deep")
        if isinstance(value, dict):
            stack.extend((keys + (k,), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((keys + (i,), v) for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > sys.float_info.max:
            raise TomlFileError(f"{source}: field '{field_name(keys)}': integer of {len(str(abs(value)))} "
                                "digits is too large for a floating-point number")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and MAX_MAGNITUDE < abs(value) < math.inf:
            raise TomlFileError(f"{source}: field '{field_name(keys)}' must be within +-{MAX_MAGNITUDE:g} (SI units), "
                                f"got {value:.6g}")
