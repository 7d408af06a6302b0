"""A progress bar for long launches on the command line (rich).

`LaunchProgress` is the launch's `progress` callback: the machine calls it
with the number of blocks each finished batch ran. Nothing is drawn for
launches that end within `delay` seconds (most do); after that a bar of
blocks done out of the grid's blocks appears on stderr (only on a terminal
unless `force`), and it is removed when the launch ends.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Optional


class LaunchProgress:
    def __init__(self, total_blocks: int, label: str = "launch", delay: float = 2.0,
                 stream: Any = None, force: bool = False) -> None:
        self.total = max(int(total_blocks), 1)
        self.label = label
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = force or bool(getattr(self.stream, "isatty", lambda: False)())
        self.force = force
        self.done = 0
        self.shown = False
        self._t0 = time.monotonic()
        self._bar: Optional[Any] = None
        self._task = None

    def __call__(self, blocks: int) -> None:
        self.done += int(blocks)
        if not self.enabled:
            return
        if self._bar is None and time.monotonic() - self._t0 >= self.delay:
            self._start()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        console = Console(file=self.stream, force_terminal=self.force or None)
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("blocks"), TimeElapsedColumn(), TimeRemainingColumn(),
                             console=console, transient=True)
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done)
        self._bar.start()
        self.shown = True

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> "LaunchProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
