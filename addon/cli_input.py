"""Checks on what a command-line user hands in: argument values, input files and the --out path.

Owns `CommandError` (a failure printed as one line, with an exit code), the argparse value types
with their documented ranges (plain ASCII decimals only), the checks that turn a missing, unreadable,
non-UTF-8, non-TOML or non-.blend input into a message naming the file (the TOML checks are
solver/tomlfile.py's, which the loaders share), the --out checks (writable, not the input under
another name) and the atomic write that leaves no half-written output. Used by __main__.py and
solver/shots/cli.py; nothing here imports bpy, numpy or the rest of the solver.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .solver.model import ORDERS
from .solver.tomlfile import TomlFileError, check_regular_file, read_toml

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

MIN_DT, MAX_DT = 1e-6, 1.0  # s: a step is a fraction of an animation frame, never more than a second
MIN_TOL, MAX_TOL = 1e-14, 1e-3  # tighter is below double precision; looser no longer solves the equations
MAX_STEPS = 1_000_000  # keeps a run within memory (poses: steps x bodies x 7 doubles)
MAX_ITERATIONS = 10_000
# Plain ASCII decimal numbers: float() and int() would also take "1_0", " 1", "inf" and other scripts' digits.
DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
INTEGER = re.compile(r"[+-]?\d+", re.ASCII)
BLEND_MAGIC = (b"BLENDER", b"\x28\xb5\x2f\xfd", b"\x1f\x8b")  # plain, zstd- and gzip-compressed .blend


class CommandError(Exception):
    """A failure the user can act on: printed as `<prog> <command>: <message>`, exit with `code`."""

    def __init__(self, message: str, code: int = EXIT_USAGE):
        super().__init__(message)
        self.code = code


# ----------------------------------------------------------------------------------------------
# argument values


def _shown(text: str) -> str:
    return repr(text[:40])


def _number(text: str, lower: float, upper: float, what: str) -> float:
    """A plain decimal number in [lower, upper]; ArgumentTypeError saying the range otherwise."""
    if not DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"must be a decimal number, got {_shown(text)}")
    value = float(text)
    if not (math.isfinite(value) and lower <= value <= upper):
        raise argparse.ArgumentTypeError(f"must be {what} in [{lower:g}, {upper:g}], got {_shown(text)}")
    return value


def _integer(text: str, upper: int) -> int:
    """A plain decimal integer in 1..upper."""
    if not INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"must be an integer, got {_shown(text)}")
    value = int(text) if len(text) <= 20 else upper + 1  # no huge conversions
    if not 1 <= value <= upper:
        raise argparse.ArgumentTypeError(f"must be an integer in 1..{upper}, got {_shown(text)}")
    return value


def step_size(text: str) -> float:
    """--dt: a time step in [MIN_DT, MAX_DT] s."""
    return _number(text, MIN_DT, MAX_DT, "a time step in seconds")


def tolerance(text: str) -> float:
    """--tol: a Newton tolerance in [MIN_TOL, MAX_TOL]."""
    return _number(text, MIN_TOL, MAX_TOL, "a tolerance")


def step_count(text: str) -> int:
    """--steps: an integer in 1..MAX_STEPS."""
    return _integer(text, MAX_STEPS)


def accuracy_order(text: str) -> int:
    """--order: the tree method's accuracy order, one of model.ORDERS."""
    if not INTEGER.fullmatch(text) or len(text) > 2 or int(text) not in ORDERS:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(map(str, ORDERS))}, got {_shown(text)}")
    return int(text)


def iteration_count(text: str) -> int:
    """--max-iter: an integer in 1..MAX_ITERATIONS."""
    return _integer(text, MAX_ITERATIONS)


# ----------------------------------------------------------------------------------------------
# input files


def input_file(path: Path, what: str) -> bytes:
    """The bytes of `path`; CommandError naming it when it is missing, a directory, a device or pipe, or
    unreadable."""
    try:
        check_regular_file(path, what)
        return path.read_bytes()
    except TomlFileError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None


def toml_file(path: Path, what: str) -> dict:
    """The parsed TOML of `path`, checked by solver/tomlfile.py (UTF-8 text, valid TOML, nesting, integers
    within float range); CommandError naming the file, and the field for a value."""
    try:
        return read_toml(path, what)
    except TomlFileError as exc:
        raise CommandError(str(exc)) from None


def blend_file(path: Path) -> None:
    """CommandError unless `path` is a readable file that starts like a .blend (plain or compressed)."""
    head = input_file(path, "scene file")[:7]
    if not head.startswith(BLEND_MAGIC):
        raise CommandError(f"{path}: not a Blender file (a .blend starts with 'BLENDER' or is compressed); "
                           f"it starts with {head!r}")


# ----------------------------------------------------------------------------------------------
# output


def output_path(out: Path, *inputs: Path, directory: bool = False) -> Path:
    """Check that `out` can be written and is none of `inputs` (by resolved path, symlink or hard link);
    creates its missing parent folders (or, with `directory`, the folder itself). Returns `out`."""
    for source in inputs:
        same = out.resolve() == source.resolve()
        with contextlib.suppress(OSError):
            same = same or os.path.samefile(out, source)
        if same:
            raise CommandError(f"--out {out} is the input file {source}; write to another file, the input "
                               "is never overwritten")
    folder = out if directory else out.parent
    if out.is_dir() and not directory:
        raise CommandError(f"--out {out}: is a directory; give a file name")
    if out.exists() and directory and not out.is_dir():
        raise CommandError(f"--out {out}: is a file; give a directory")
    if out.exists() and not directory and not out.is_file():
        raise CommandError(f"--out {out}: not a regular file (a device or pipe); give a file name")
    blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise CommandError(f"--out {out}: {blocking} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--out {out}: cannot create folder {folder}: {exc.strerror or exc}") from None
    try:  # os.access says yes to root and to /proc; creating a file is the test that holds
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise CommandError(f"--out {out}: cannot write in folder {folder}: {exc.strerror or exc}") from None
    if out.exists() and not directory and not os.access(out, os.W_OK):
        raise CommandError(f"--out {out}: the file exists and is not writable")
    return out


@contextlib.contextmanager
def atomic_output(out: Path, suffix: str) -> Iterator[Path]:
    """A temporary path beside `out`, ending in `suffix` (".npz": numpy appends it otherwise), to write to;
    renamed onto `out` when the block succeeds, removed when it fails, so `out` is never left half-written.
    A symlink `out` is written through (its target is replaced, not the link)."""
    out = out.resolve()
    handle, temp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=suffix, dir=out.parent)
    os.close(handle)
    try:
        yield Path(temp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # mkstemp's 0600 would make the output private
        os.replace(temp, out)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):  # a full disk, a folder removed meanwhile
            raise CommandError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
        raise
