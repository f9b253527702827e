"""``python bench/paint_probe.py OUT moeconsole-args...``: the command line of ``moeconsole``, with
the CPU it has used written to OUT at the moment the run screen's first frame is drawn, then exit
(``bench_paint.py --at-frame``). The moment is the screen's own (``RunScreen._first_frame_drawn``,
Textual's call after the refresh that drew the snapshot), not a look at the terminal later: under
load the look comes late and counts the work after the frame. The hook is set as the run screen's
module is imported (a finder in front of the others); nothing else of the command is changed."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time


class _HookScreen:
    """A finder in front of the others: when the run screen's module is imported, its loader runs
    as usual and then the hook is set (no thread, no polling: nothing else changes)."""

    NAME = "moeconsole.console.screens.run"

    def __init__(self, on_loaded) -> None:  # noqa: ANN001
        self.on_loaded = on_loaded

    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201
        if name != self.NAME:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader, on_loaded = spec.loader, self.on_loaded
        exec_module = loader.exec_module

        def exec_and_hook(module) -> None:  # noqa: ANN001
            exec_module(module)
            on_loaded(module)
        loader.exec_module = exec_and_hook  # type: ignore[method-assign]
        return spec


def main() -> None:
    out = sys.argv[1]
    t0 = time.perf_counter()

    def hook(module) -> None:  # noqa: ANN001
        screen = module.RunScreen
        drawn = screen._first_frame_drawn

        def first_frame_drawn(self) -> None:  # noqa: ANN001
            if self.first_frame_at is None:
                with open(out + ".tmp", "w") as f:
                    json.dump({"cpu": time.process_time(), "main": time.thread_time(),
                               "wall": time.perf_counter() - t0}, f)
                os.replace(out + ".tmp", out)
                os._exit(0)
            drawn(self)
        screen._first_frame_drawn = first_frame_drawn
    sys.meta_path.insert(0, _HookScreen(hook))
    sys.argv = ["moeconsole"] + sys.argv[2:]
    from moeconsole.console.cli import main as cli
    sys.exit(cli())


if __name__ == "__main__":
    main()
