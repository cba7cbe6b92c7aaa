"""Seeded fuzzer of the command line's input files: malformed variants of every shipped preset through
`python -m addon simulate` and `python -m addon shot`, each run classified.

    python -m tools.fuzz_files --seed 1 --count 400 [--timeout 60] [--keep DIR] [--progress]

Owns the cases (which preset, which mutation class from tools/fuzz_mutants.py, which command line), the
worker that runs them and the classification; docs/fuzz.md reports a run. Sources: the mechanism
presets (simulate, `maximal` for files with colliders, else `tree`), the vehicle presets (simulate
--method vehicle) and the shot presets (shot --max-iter 1, so a valid file ends in a second, unsolved);
three more classes damage a file a shot refers to (its vehicle or mechanism, as a path beside the shot),
give a command a wrong file (absent, a folder, a device, not TOML, another command's file) and damage
the numeric arguments (--dt, --tol, --steps, --max-iter).

Each case runs through addon.__main__.main() in a worker process (one worker serves many cases; a
worker that dies or overruns the time limit is replaced). A run is classified as one of
    rejected        exit 2, one line on stderr naming the file (or the argument)
    solver failure  exit 1, one line naming the file
    ok              exit 0
or a bug: traceback, internal error (the CLI's safety net caught it), crash (the worker died),
hang (over the time limit), not one line, file not named, exit code other than 0, 1 or 2, and
invalid accepted (exit 0 or 1 for a case invalid by construction: not UTF-8, a duplicated or unknown
key, deep nesting, NaN, an integer no float holds, a wrong file, a bad argument).
The command prints a table of classes by outcome and each bug with its file; it exits 1 if any bug.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import selectors
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.fuzz_mutants import MUTATIONS, mutant

REPO = Path(__file__).resolve().parent.parent
PRESETS = REPO / "presets"
REFERENCED = "referenced file"
WRONG_FILE = "wrong file"
ARGUMENT = "bad argument"
CLASSES = (*MUTATIONS, REFERENCED, WRONG_FILE, ARGUMENT)
# Inputs that are no file of the command's kind, relative to the repository (the shot and mechanism presets
# are each other's wrong file).
NO_INPUT = ("absent.toml", "presets", "README.md", "blender_manifest.toml", "/dev/null", "/dev/zero")
WRONG_FILES = {"simulate": (*NO_INPUT, "presets/shots/crane_anti_sway.toml"),
               "shot": (*NO_INPUT, "presets/crane.toml", "presets/vehicles/sedan.toml")}
OUTCOME_OF_EXIT = {2: "rejected", 1: "solver failure", 0: "ok"}
OUTCOMES = tuple(OUTCOME_OF_EXIT.values())
BUGS = ("traceback", "internal error", "crash", "hang", "not one line", "file not named", "bad exit code",
        "invalid accepted")
SIMULATE_STEPS = "3"
SHOT_ITERATIONS = "1"
# Every one out of range or not plain ASCII decimal for every option (the last: an Arabic-Indic digit one).
BAD_NUMBERS = ("inf", "-inf", "nan", "1e308", "1e309", "0", "-0", "-1", "5e-324", "1e-300", "ten", "", "0x10",
               "1_0", "99999999999999999999999", "1.5", "1e3", " 1", "\u0661")
ARGUMENTS = {"simulate": ("--dt", "--tol", "--steps"), "shot": ("--max-iter",)}
WORKER_MEMORY = 4 << 30  # bytes of address space per worker: a runaway allocation fails, not the machine


@dataclass(frozen=True)
class Source:
    """A shipped preset and how the command line runs it."""

    path: Path
    command: str
    options: tuple[str, ...]
    reference: str | None = None  # a shot's field naming its vehicle or mechanism


@dataclass(frozen=True)
class Case:
    kind: str  # one of CLASSES
    source: Path
    detail: str
    argv: tuple[str, ...]
    names: tuple[str, ...]  # a failure's line must name one of these (the files, or the argument)
    invalid: bool  # invalid by construction: only exit 2 is right


@dataclass
class Run:
    case: Case
    outcome: str
    code: int | None
    stderr: str
    seconds: float


@dataclass
class Report:
    runs: list[Run] = field(default_factory=list)

    @property
    def bugs(self) -> list[Run]:
        return [r for r in self.runs if r.outcome in BUGS]

    def table(self) -> str:
        """Markdown: one row per class, cases by outcome."""
        counts = Counter((r.case.kind, r.outcome) for r in self.runs)
        kinds = Counter(r.case.kind for r in self.runs)
        head = ["class", "cases", "rejected (exit 2)", "solver failure (exit 1)", "ok (exit 0)", "bugs"]
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for kind in [k for k in CLASSES if kinds[k]]:
            bugs = sum(counts[kind, b] for b in BUGS)
            rows.append(f"| {kind} | {kinds[kind]} | " + " | ".join(str(counts[kind, o]) for o in OUTCOMES)
                        + f" | {bugs} |")
        total = Counter(r.outcome for r in self.runs)
        rows.append(f"| all | {len(self.runs)} | " + " | ".join(str(total[o]) for o in OUTCOMES)
                    + f" | {len(self.bugs)} |")
        return "\n".join(rows)


# ----------------------------------------------------------------------------------------------
# cases


def sources() -> list[Source]:
    """Every shipped preset file with the command that reads it."""
    found = []
    for path in sorted(PRESETS.glob("*.toml")):
        method = "maximal" if "[[collider]]" in path.read_text(encoding="utf-8") else "tree"
        found.append(Source(path, "simulate", ("--method", method, "--steps", SIMULATE_STEPS)))
    for path in sorted((PRESETS / "vehicles").glob("*.toml")):
        found.append(Source(path, "simulate", ("--method", "vehicle", "--steps", SIMULATE_STEPS)))
    for path in sorted((PRESETS / "shots").glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        reference = "mechanism" if "\nmechanism =" in text else "vehicle"
        found.append(Source(path, "shot", ("--max-iter", SHOT_ITERATIONS), reference))
    return found


def _referenced_file(shot: Source) -> Path:
    """The preset a shot file names in its vehicle or mechanism field."""
    name = tomllib.loads(shot.path.read_text(encoding="utf-8"))["shot"][shot.reference]
    return (PRESETS / "vehicles" if shot.reference == "vehicle" else PRESETS) / f"{name}.toml"


def cases(seed: int, count: int, folder: Path) -> Iterator[Case]:
    """`count` cases drawn with `seed`, their files written to `folder`; the classes take turns. A mutation
    class with nothing to damage in the file drawn (no list, no string) skips its turn."""
    rng = random.Random(seed)
    pool = sources()
    shots = [s for s in pool if s.reference]
    for i in range(count):
        kind = CLASSES[i % len(CLASSES)]
        source = rng.choice(shots if kind == REFERENCED else pool)
        out = ("--out", str(folder / f"case{i:04d}.npz"))
        if kind == ARGUMENT:
            option, value = rng.choice(ARGUMENTS[source.command]), rng.choice(BAD_NUMBERS)
            argv = (source.command, str(source.path), *source.options, option, value, *out)
            yield Case(kind, source.path, f"{option} {value!r}", argv, (option,), invalid=True)
        elif kind == WRONG_FILE:
            wrong = REPO / rng.choice(WRONG_FILES[source.command])
            argv = (source.command, str(wrong), *source.options, *out)
            yield Case(kind, source.path, f"{source.command} given {wrong}", argv, (str(wrong),), invalid=True)
        else:
            path = folder / f"case{i:04d}_{source.path.name}"
            try:
                detail, names, invalid = (_damaged_reference(source, path, rng) if kind == REFERENCED
                                          else _damaged(kind, source, path, rng))
            except LookupError:
                continue
            yield Case(kind, source.path, detail, (source.command, str(path), *source.options, *out), names, invalid)


def _damaged(kind: str, source: Source, path: Path, rng: random.Random) -> tuple[str, tuple[str, ...], bool]:
    """Write a mutant of class `kind` of the source to `path`: (detail, names a failure must give, invalid)."""
    made = mutant(kind, source.path.read_text(encoding="utf-8"), rng)
    path.write_bytes(made.data)
    return made.detail, (str(path),), made.invalid


def _damaged_reference(shot: Source, path: Path, rng: random.Random) -> tuple[str, tuple[str, ...], bool]:
    """Write a mutant of the file `shot` names beside `path`, and the shot naming it to `path`."""
    target = _referenced_file(shot)
    damage = rng.choice(list(MUTATIONS))
    made = mutant(damage, target.read_text(encoding="utf-8"), rng)
    ref = path.with_name(f"{path.stem}_ref_{target.name}")
    ref.write_bytes(made.data)
    text = shot.path.read_text(encoding="utf-8")
    path.write_text(text.replace(f'{shot.reference} = "{target.stem}"', f'{shot.reference} = "{ref.name}"'),
                    encoding="utf-8")
    return f"{target.name}: {damage}: {made.detail}", (str(path), str(ref)), made.invalid


# ----------------------------------------------------------------------------------------------
# running


def classify(case: Case, code: int | None, stderr: str, escaped: bool = False) -> str:
    """The outcome of one run (OUTCOMES or BUGS); warnings on stderr do not count as lines."""
    if escaped or "Traceback (most recent call last)" in stderr:
        return "traceback"
    lines = [line for line in stderr.splitlines() if line.strip() and ": warning: " not in line]
    if any("internal error" in line for line in lines):
        return "internal error"
    if code not in (0, 1, 2):
        return "bad exit code"
    if len(lines) != (code != 0):
        return "not one line"
    if code != 0 and not any(name in lines[0] for name in case.names):
        return "file not named"
    if case.invalid and code != 2:
        return "invalid accepted"
    return OUTCOME_OF_EXIT[code]


class Worker:
    """A process running cases through addon.__main__.main(), one JSON line in and out per case."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
        env.pop("SYMPLEX_DEBUG", None)
        return subprocess.Popen([sys.executable, "-m", "tools.fuzz_files", "--worker"], cwd=REPO, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def run(self, case: Case) -> Run:
        if self.process is None:
            self.process = self._start()
        process = self.process
        start = time.perf_counter()
        process.stdin.write(json.dumps(case.argv) + "\n")
        process.stdin.flush()
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(self.timeout)
        if not ready:
            self.close()
            return Run(case, "hang", None, f"no result within {self.timeout:g} s", self.timeout)
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            self.process = None
            return Run(case, "crash", code, f"the worker died (exit status {code})", time.perf_counter() - start)
        result = json.loads(line)
        outcome = classify(case, result["code"], result["stderr"], result["escaped"])
        return Run(case, outcome, result["code"], result["stderr"], time.perf_counter() - start)

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def serve() -> None:
    """The worker's loop: argv lines in, {code, stderr, escaped} lines out. Output of the cases (and of C
    code writing to file descriptor 1) never reaches the protocol stream."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    from addon.__main__ import main

    for line in sys.stdin:
        err = io.StringIO()
        escaped = False
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                code = main(json.loads(line))
            except BaseException:  # main() promises never to raise: anything here is a bug to report
                code, escaped = None, True
                traceback.print_exc()
        protocol.write(json.dumps({"code": code, "stderr": err.getvalue(), "escaped": escaped}) + "\n")
        protocol.flush()


def fuzz(seed: int, count: int, timeout: float = 60.0, keep: Path | None = None,
         progress: bool = False) -> Report:
    """Run `count` cases drawn with `seed`; their files go to `keep` (kept) or a temporary folder."""
    report = Report()
    worker = Worker(timeout)
    with contextlib.ExitStack() as stack:
        folder = keep if keep is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        stack.callback(worker.close)
        for case in cases(seed, count, folder):
            run = worker.run(case)
            report.runs.append(run)
            if progress:
                print(f"{len(report.runs):4d} {run.seconds:5.1f} s {run.outcome:14s} {case.kind}: "
                      f"{case.source.name}: {case.detail[:60]}", file=sys.stderr)
    return report


def describe(run: Run) -> str:
    last = run.stderr.strip().splitlines()[-1:] or [""]
    return (f"{run.outcome}: {run.case.kind}: {run.case.source.relative_to(REPO)}: {run.case.detail[:100]}\n"
            f"    {' '.join(run.case.argv)}\n    exit {run.code}: {last[0][:400]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz_files", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=100, help="number of cases")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it counts as a hang")
    parser.add_argument("--keep", type=Path, help="write the cases' files here and keep them")
    parser.add_argument("--progress", action="store_true", help="one line per case on stderr")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        serve()
        return 0
    start = time.perf_counter()
    report = fuzz(args.seed, args.count, args.timeout, args.keep, args.progress)
    print(f"python -m tools.fuzz_files --seed {args.seed} --count {args.count}: {len(report.runs)} cases in "
          f"{time.perf_counter() - start:.0f} s\n")
    print(report.table())
    for run in report.bugs:
        print("\n" + describe(run))
    return 1 if report.bugs else 0


if __name__ == "__main__":
    sys.exit(main())
