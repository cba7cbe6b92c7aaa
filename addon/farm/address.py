"""Sweep keys: which value of a mechanism or shot file `--vary KEY=...` changes (docs/farm.md, "Keys").

A key is a dotted path through the parsed TOML file:
  - a table's field by name:                    `shot.dt`, `costs.smoothness`, `model.gravity.2`
  - an entry of an array of tables ([[body]], [[key]], ...) by its `name` or its 0-based number:
                                                `body.bob.mass`, `key.parked.heading`, `key.0.frame`
  - an element of a list by its 0-based number, or x, y, z for a list of 3:  `start.position.x`
Conveniences, tried only when the plain reading finds nothing:
  - a plural names the array of tables:         `keys.0.frame` = `key.0.frame`, `bodies.bob.mass`
  - x, y, z on an entry with a `position`:      `keys.0.x` = `key.0.position.0`
  - a field of a [vehicle] table's parameters:  `vehicle.mass` = `vehicle.parameters.mass`
In a shot file, `vehicle.<...>` and `mechanism.<...>` go into the file that [shot] vehicle or [shot] mechanism
names (so `vehicle.mass` is the sedan's mass in parallel_parking.toml), and `dt`, `steps` are `shot.dt`,
`shot.steps`. Run settings that are not in any file: `dt`, `steps`, `method`, `tol` of a mechanism run
(as `simulate` takes them) and `max_iter` of a shot solve. A key must name a value the file has (write a
default into the file to vary it); anything else is a usage error with the nearest names.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ..cli_input import CommandError

MAIN = "main"  # the swept file itself; a shot's referenced file is "vehicle" or "mechanism"
RUN_SETTINGS = {"mechanism": ("dt", "steps", "method", "tol"), "shot": ("max_iter",)}
SHOT_ALIASES = {"dt": ("shot", "dt"), "steps": ("shot", "steps")}
COMPONENTS = ("x", "y", "z")

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Target:
    """Where a key points: a run setting, or `path` inside one of the variant's documents."""
    key: str
    document: str = MAIN
    path: Path_ = ()
    setting: str | None = None


def _suggest(word: str, names: list[str]) -> str:
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _fail(key: str, where: str, problem: str, names: list[str], word: str) -> CommandError:
    listing = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
    return CommandError(f"--vary {key}: {where}{problem}{_suggest(word, names)} (there: {listing or 'nothing'})")


def _singular(word: str) -> str:
    return word[:-3] + "y" if word.endswith("ies") else word[:-1] if word.endswith("s") else word


def _in_table(key: str, table: dict, word: str, where: str) -> Path_:
    """The path below `table` that `word` names (one step, or two through an alias)."""
    if word in table:
        return (word,)
    singular = _singular(word)
    if singular != word and isinstance(table.get(singular), list):
        return (singular,)
    if word in COMPONENTS and isinstance(table.get("position"), list) and len(table["position"]) == 3:
        return ("position", COMPONENTS.index(word))
    parameters = table.get("parameters")
    if isinstance(parameters, dict) and word in parameters:
        return ("parameters", word)
    names = list(table) + (list(parameters) if isinstance(parameters, dict) else [])
    raise _fail(key, where, f"no field {word!r}", names, word)


def _in_list(key: str, items: list, word: str, where: str) -> int:
    """The index in `items` that `word` names: a 0-based number, an entry's name, or x, y, z."""
    if word.isdigit():
        if int(word) < len(items):
            return int(word)
        raise CommandError(f"--vary {key}: {where}entry {word} does not exist (numbers 0..{len(items) - 1})")
    names = [item.get("name") for item in items if isinstance(item, dict)]
    if word in names:
        return names.index(word)
    if word in COMPONENTS and len(items) == 3 and not names:
        return COMPONENTS.index(word)
    raise _fail(key, where, f"no entry {word!r}", [str(n) for n in names if n is not None], word)


def walk(key: str, document: dict, words: list[str], label: str) -> Path_:
    """The path in `document` that `words` name; CommandError naming the first word that names nothing, with
    the nearest names. The path must end at a single value, not a table or list."""
    node: object = document
    path: list[str | int] = []
    for word in words:
        where = f"{label}{'.'.join(map(str, path))}: " if path else label
        if isinstance(node, dict):
            step = _in_table(key, node, word, where)
        elif isinstance(node, list):
            step = (_in_list(key, node, word, where),)
        else:
            raise CommandError(f"--vary {key}: {where}is the value {node!r}, it has no field {word!r}")
        for part in step:
            node = node[part]  # type: ignore[index]
        path.extend(step)
    if isinstance(node, (dict, list)):
        inside = list(node) if isinstance(node, dict) else [
            str(item.get("name", i)) if isinstance(item, dict) else str(i) for i, item in enumerate(node)]
        raise CommandError(f"--vary {key}: names a {'table' if isinstance(node, dict) else 'list'}, not one value; "
                           f"add one of: {', '.join(map(str, inside[:20]))}")
    return tuple(path)


def resolve(key: str, kind: str, documents: dict[str, dict]) -> Target:
    """The Target of `key` in a file of `kind` ("mechanism" or "shot") whose parsed documents are `documents`
    (MAIN, and for a shot the file its [shot] names under "vehicle" or "mechanism")."""
    if not key or any(not word for word in key.split(".")):
        raise CommandError(f"--vary {key}: a key is a dotted path such as shot.dt or body.bob.mass")
    if key in RUN_SETTINGS[kind]:
        return Target(key, setting=key)
    words = key.split(".")
    if kind == "shot" and key in SHOT_ALIASES:
        words = list(SHOT_ALIASES[key])
    elif kind == "shot" and words[0] in documents and words[0] != MAIN and len(words) > 1:
        document = words[0]
        inner = words if document == "vehicle" else words[1:]  # a vehicle file keeps its values in [vehicle]
        return Target(key, document, walk(key, documents[document], inner, f"the {document} file: "))
    settings = list(RUN_SETTINGS[kind]) + (list(SHOT_ALIASES) if kind == "shot" else [])
    if len(words) == 1 and words[0] not in documents[MAIN] and difflib.get_close_matches(key, settings, 1):
        raise CommandError(f"--vary {key}: not a field or run setting{_suggest(key, settings)} "
                           f"(run settings: {', '.join(settings)})")
    return Target(key, MAIN, walk(key, documents[MAIN], words, ""))
