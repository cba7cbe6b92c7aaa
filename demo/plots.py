"""The demo's matplotlib plumbing: pyplot on the Agg backend (or None where matplotlib is missing), the one way
every demo figure is saved, and the small copies of demo pictures the docs show.

Every plot of demo/ goes through `pyplot()` and `save_figure(fig, path)`; `doc_figures` scales a demo's
pictures down for docs/img/.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

DPI = 100  # every demo figure
DOC_WIDTH = 640  # pixels: the longer side of a docs copy
DOC_COLOURS = 256  # a docs copy keeps a palette of this many (Workbench renders and plots have few)


def pyplot():
    """matplotlib's pyplot on the Agg backend, or None where matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path) -> Path:
    """Lay `fig` out tightly, write it to `path` at DPI and close it; returns `path`."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def doc_figures(out_dir: Path, docs_dir: Path, names: tuple[str, ...]) -> list[Path]:
    """Copies of out_dir/<name>.png for each of `names`, scaled down to DOC_WIDTH and DOC_COLOURS, in `docs_dir`."""
    from PIL import Image

    docs_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        with Image.open(out_dir / f"{name}.png") as image:
            image.thumbnail((DOC_WIDTH, DOC_WIDTH))
            image.convert("RGB").quantize(DOC_COLOURS).save(docs_dir / f"{name}.png", optimize=True)
        written.append(docs_dir / f"{name}.png")
    return written


def run_demo_script(run: Callable[[Path, list[str]], None], figures: tuple[str, ...], description: str) -> None:
    """A demo module's command line: `python -m demo.<name> OUT [--docs DIR]` runs `run(OUT, report)`, prints
    its report and, with --docs, writes the docs' copies of `figures`."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("out", type=Path)
    parser.add_argument("--docs", type=Path, help="also write small copies for the docs here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report: list[str] = []
    run(args.out.resolve(), report)
    print("\n".join(report))
    if args.docs is not None:
        for path in doc_figures(args.out.resolve(), args.docs, figures):
            print(f"wrote {path}")
