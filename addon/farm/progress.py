"""A progress bar on stderr for farm commands: redrawn in place on a terminal, plain lines otherwise.

Owns only the drawing; the commands print their own per-item summary lines on stdout.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30  # characters of the bar


class Progress:
    """`total` items; `advance(label)` after each one finishes. On a tty the bar is one line rewritten in
    place (and cleared by `close`); elsewhere each item is one line `[done/total] label (elapsed)`."""

    def __init__(self, total: int, what: str, stream: TextIO | None = None):
        self.total, self.what, self.done = total, what, 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        if self.tty:
            self._draw("")

    def advance(self, label: str, line: str) -> None:
        """One more item done: print its summary `line` on stdout, then the bar (or a progress line)."""
        self.done += 1
        if self.tty:
            self.close()
        print(line, flush=True)
        if self.tty:
            self._draw(label)
        else:
            print(f"[{self.done}/{self.total}] {label} ({time.perf_counter() - self.start:.1f} s)",
                  file=self.stream, flush=True)

    def _draw(self, label: str) -> None:
        filled = WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (WIDTH - filled)
        line = f"[{bar}] {self.done}/{self.total} {self.what} {time.perf_counter() - self.start:5.1f} s {label}"
        self.stream.write("\r" + line[:120].ljust(120))
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()
