"""The variations of a sweep (`--vary KEY=v1,v2,...` or `KEY=lo:hi:n`) and the variants they make.

Owns reading a swept file into documents (the file, and for a shot the vehicle or mechanism file it names),
parsing `--vary` values, and the Cartesian product: one Variant per combination, in the order the variations
were given (the last varies fastest), each carrying its files as TOML text and its run settings, so a worker
on any machine can solve it without the client's files.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..cli_input import CommandError, iteration_count, step_count, step_size, tolerance, toml_file
from .address import MAIN, Target, resolve
from .toml_write import dumps

MAX_VARIANTS = 100_000
# The run settings a sweep may vary, with their checks; defaults are simulate's and the shot solver's.
SETTING_TYPES = {"dt": step_size, "steps": step_count, "tol": tolerance, "method": str, "max_iter": iteration_count}
RUN_DEFAULTS = {"mechanism": {"dt": 0.01, "steps": 100, "method": "tree", "tol": 1e-10}, "shot": {"max_iter": None}}


@dataclass(frozen=True)
class SweptFile:
    """A swept file read into documents: MAIN and the file a shot names ("vehicle" or "mechanism")."""
    path: Path
    kind: str  # "mechanism" or "shot"
    documents: dict[str, dict]
    file_names: dict[str, str]  # document -> the file name it is written under for a worker


@dataclass(frozen=True)
class Variation:
    target: Target
    values: tuple


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str
    values: tuple[tuple[str, object], ...]  # (key, value) in --vary order
    files: dict[str, str]  # file name -> TOML text
    main: str  # the file name of the swept file
    settings: dict = field(default_factory=dict)

    def label(self) -> str:
        return f"{self.name} ({', '.join(f'{k}={v}' for k, v in self.values)})"


def read_swept_file(path: Path) -> SweptFile:
    """`path` (a mechanism or shot file) and, for a shot, the vehicle or mechanism file it names."""
    from ..solver.shots.shotfile import mechanism_file, vehicle_file

    main = toml_file(path, "mechanism or shot file")
    documents, names = {MAIN: main}, {MAIN: path.name}
    head = main.get("shot")
    if not isinstance(head, dict):
        return SweptFile(path, "mechanism", documents, names)
    for document, locate in (("vehicle", vehicle_file), ("mechanism", mechanism_file)):
        ref = head.get(document)
        if isinstance(ref, str) and ref:
            try:
                referenced = Path(locate(path, ref))
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: [shot]: field {document!r}: {exc}") from None
            documents[document] = toml_file(referenced, f"{document} file")
            names[document] = f"{document}-{referenced.name}"
    return SweptFile(path, "shot", documents, names)


def parse_token(text: str) -> object:
    """A value as TOML would read it: an integer, a float, true/false, else the text as a string."""
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def parse_values(key: str, text: str) -> list:
    """`v1,v2,...` or `lo:hi:n` (n evenly spaced values, both ends included)."""
    parts = text.split(":")
    if len(parts) == 3:
        lo, hi, n = (parse_token(p) for p in parts)
        if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and isinstance(n, int) and n >= 2
                and math.isfinite(lo) and math.isfinite(hi)) or isinstance(n, bool):
            raise CommandError(f"--vary {key}={text}: a range is lo:hi:n with numbers lo, hi and a count n >= 2")
        return [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    tokens = text.split(",")
    if any(not t.strip() for t in tokens):
        raise CommandError(f"--vary {key}={text}: an empty value; give KEY=v1,v2,... or KEY=lo:hi:n")
    return [parse_token(t.strip()) for t in tokens]


def _typed(target: Target, current: object, value: object) -> object:
    """`value` as the type the file or setting holds: an integer for a float field becomes a float; run settings
    pass simulate's own checks."""
    if target.setting is not None:
        try:
            return SETTING_TYPES[target.setting](str(value))
        except argparse.ArgumentTypeError as exc:
            raise CommandError(f"--vary {target.key}={value}: {exc}") from None
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _current(swept: SweptFile, target: Target) -> object:
    node: object = swept.documents[target.document]
    for part in target.path:
        node = node[part]  # type: ignore[index]
    return node


def parse_variations(swept: SweptFile, specs: list[str]) -> list[Variation]:
    """One Variation per `--vary KEY=VALUES`; CommandError (exit 2) for a malformed spec, an unknown key (with
    the nearest names) or a key given twice."""
    variations, seen = [], set()
    for spec in specs:
        key, sep, text = spec.partition("=")
        key = key.strip()
        if not sep or not key or not text:
            raise CommandError(f"--vary {spec}: give KEY=v1,v2,... or KEY=lo:hi:n")
        target = resolve(key, swept.kind, swept.documents)
        where = (target.document, target.path, target.setting)
        if where in seen:
            raise CommandError(f"--vary {key}: this value is varied twice")
        seen.add(where)
        current = None if target.setting else _current(swept, target)
        values = tuple(_typed(target, current, value) for value in parse_values(key, text))
        variations.append(Variation(target, values))
    return variations


def _set(document: dict, path: tuple, value: object) -> None:
    node = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


def variants(swept: SweptFile, variations: list[Variation]) -> list[Variant]:
    """The Cartesian product of `variations`, each a Variant with its files as TOML text."""
    count = math.prod(len(v.values) for v in variations)
    if count > MAX_VARIANTS:
        raise CommandError(f"the variations make {count} variants, more than {MAX_VARIANTS}; sweep fewer values")
    width = max(2, len(str(count - 1)))
    out = []
    for number, combination in enumerate(itertools.product(*(v.values for v in variations))):
        documents = copy.deepcopy(swept.documents)
        settings = dict(RUN_DEFAULTS[swept.kind])
        for variation, value in zip(variations, combination):
            if variation.target.setting is not None:
                settings[variation.target.setting] = value
            else:
                _set(documents[variation.target.document], variation.target.path, value)
        for document in documents:
            if document != MAIN:  # the worker finds the referenced file beside the swept one
                documents[MAIN]["shot"][document] = swept.file_names[document]
        files = {swept.file_names[d]: dumps(doc) for d, doc in documents.items()}
        values = tuple((v.target.key, value) for v, value in zip(variations, combination))
        out.append(Variant(f"v{number:0{width}d}", swept.kind, values, files, swept.file_names[MAIN], settings))
    return out

