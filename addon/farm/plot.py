"""The sweep's picture: cost over the varied values, one line per combination of the other varied keys.

Owns only drawing (matplotlib, a development dependency the extension does not carry; without it the plot is
skipped with a note). Failed variants are red crosses on the bottom edge, so a gap in a line is explained.
"""

from __future__ import annotations

import math
from pathlib import Path

from .solve import VariantResult

MAX_LINES = 12  # more combinations than this are drawn without a legend entry each


def _axis(values: list) -> tuple[list[float], list[str] | None]:
    """Positions for `values` on the x axis: the numbers themselves, or 0..n-1 with labels for other values."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values], None
    labels = list(dict.fromkeys(str(v) for v in values))
    return [float(labels.index(str(v))) for v in values], labels


def plot_sweep(out: Path, title: str, cost_name: str, keys: list[str], values: list[tuple],
               results: list[VariantResult]) -> str:
    """Draw `results` (one per row of `values`, in `keys` order) to `out`; returns a note for the report."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot (matplotlib is not installed)"
    varied = [i for i, key in enumerate(keys) if len({repr(row[i]) for row in values}) > 1] or [0]
    x_index, others = varied[0], varied[1:]
    positions, labels = _axis([row[x_index] for row in values])
    groups: dict[tuple, list[int]] = {}
    for n, row in enumerate(values):
        groups.setdefault(tuple(row[i] for i in others), []).append(n)
    costs = [r.cost if r.ok and math.isfinite(r.cost) else math.nan for r in results]
    finite = [c for c in costs if not math.isnan(c)]
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for number, (group, members) in enumerate(groups.items()):
        members.sort(key=lambda n: positions[n])
        name = ", ".join(f"{keys[i]}={v:g}" if isinstance(v, float) else f"{keys[i]}={v}" for i, v in zip(others, group))
        ax.plot([positions[n] for n in members], [costs[n] for n in members], "o-",
                label=(name or None) if number < MAX_LINES else None)
    failed = [n for n, r in enumerate(results) if not r.ok]
    if failed:
        bottom = min(finite) if finite else 0.0
        ax.plot([positions[n] for n in failed], [bottom] * len(failed), "x", color="red", markersize=10,
                label=f"failed ({len(failed)})")
    if len(finite) > 1 and min(finite) > 0 and max(finite) / min(finite) > 100:
        ax.set_yscale("log")
    if labels:
        ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel(keys[x_index])
    ax.set_ylabel(cost_name)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(groups) > 1 or failed:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return f"plot {out}"
