"""The file fuzzer (tools/fuzz_files.py): its classification, and seeded runs over malformed presets
through the command line that must find no traceback, internal error, crash, hang, unnamed file or
invalid input accepted. The small run is in the fast tier; the run behind docs/fuzz.md is slow."""

from __future__ import annotations

import random

import pytest

from tools.fuzz_files import BUGS, CLASSES, Case, classify, fuzz
from tools.fuzz_mutants import MUTATIONS, mutant, toml_document

FILE = "/tmp/rig.toml"
CASE = Case("type swap", None, "body.0.mass = true", ("simulate", FILE), (FILE,), invalid=False)
INVALID = Case("not UTF-8", None, "UTF-16 encoded", ("simulate", FILE), (FILE,), invalid=True)
PREFIX = "python -m addon simulate: "


@pytest.mark.parametrize("case,code,stderr,outcome", [
    (CASE, 2, f"{PREFIX}{FILE}: [[body]] 'bob': field 'mass' must be a number, got true\n", "rejected"),
    (CASE, 1, f"{PREFIX}{FILE}: Newton did not converge at step 3 (t = 0.03 s)\n", "solver failure"),
    (CASE, 0, "", "ok"),
    (CASE, 0, f"{PREFIX}warning: {FILE}: slender links\n", "ok"),
    (CASE, 1, f"{PREFIX}Newton did not converge at step 3 (t = 0.03 s)\n", "file not named"),
    (CASE, 1, f"{PREFIX}internal error: KeyError: 'world' (please report)\n", "internal error"),
    (CASE, 1, "Traceback (most recent call last):\n  ...\nKeyError: 'world'\n", "traceback"),
    (CASE, 2, f"{PREFIX}{FILE}: one\n{PREFIX}{FILE}: two\n", "not one line"),
    (CASE, -11, "", "bad exit code"),
    (INVALID, 1, f"{PREFIX}{FILE}: Newton did not converge at step 1 (t = 0.01 s)\n", "invalid accepted"),
    (INVALID, 0, "", "invalid accepted"),
    (INVALID, 2, f"{PREFIX}{FILE}: not UTF-8 text (byte 0xff at offset 0)\n", "rejected"),
])
def test_classification(case, code, stderr, outcome):
    assert classify(case, code, stderr) == outcome


def test_an_exception_out_of_main_is_a_traceback():
    assert classify(CASE, None, "", escaped=True) == "traceback"


def test_every_mutation_class_damages_a_preset_and_the_document_writer_round_trips():
    import tomllib

    from addon.solver.presets import preset_path

    text = preset_path("four_bar").read_text(encoding="utf-8")
    assert tomllib.loads(toml_document(tomllib.loads(text)).decode()) == tomllib.loads(text)
    rng = random.Random(0)
    for kind in MUTATIONS:
        made = mutant(kind, text, rng)
        assert made.kind == kind and made.data != text.encode(), kind


def test_a_small_seeded_run_finds_no_bug():
    report = fuzz(seed=5, count=2 * len(CLASSES), timeout=60.0)
    assert {run.case.kind for run in report.runs} == set(CLASSES)
    assert not report.bugs, "\n".join(f"{r.outcome}: {r.case.detail}: {r.stderr[-300:]}" for r in report.bugs)


@pytest.mark.slow
def test_the_documented_run_finds_no_bug():
    """The run of docs/fuzz.md: `python -m tools.fuzz_files --seed 1 --count 400`."""
    report = fuzz(seed=1, count=400, timeout=120.0)
    assert len(report.runs) >= 390  # a class with nothing to damage in a file skips that case
    outcomes = {run.outcome for run in report.runs}
    assert not outcomes & set(BUGS), "\n".join(f"{r.outcome}: {r.case.detail}: {r.stderr[-300:]}"
                                               for r in report.bugs)
