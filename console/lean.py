"""What the attached console's process leaves out of memory: the one place that decides it.

The console is a long-lived process on a training node, beside nvitop; every MiB it holds is
held for days (docs/benchmarks.md, ``ui``). Textual runs on asyncio, and asyncio's event loop
imports :mod:`ssl` at import time for TLS connections the console never makes: that loads
OpenSSL's libcrypto and libssl, about 4 MiB of resident memory and 7-15 ms of start-up. Nothing in
the UI opens a TLS connection (it reads files and a UNIX control socket; webhooks are the
runner's), so the UI is imported with :mod:`ssl` held back: asyncio then records that TLS is
unavailable (``ssl = None``, its documented fallback when Python is built without OpenSSL).
The hold is lifted right after, so a later ``import ssl`` in the same process works as usual.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

# Modules whose import-time ``try: import ssl / except ImportError: ssl = None`` binds TLS
# support once (CPython 3.11 asyncio/base_events.py:33-36, selector_events.py:15-19,
# sslproto.py:4-7).
_TLS_USERS = ("asyncio",)


def import_ui(module: str) -> ModuleType:
    """Import ``module`` (the console's Textual app) without OpenSSL when asyncio is not loaded
    yet; when it is (a test process, an embedding program), nothing is held back."""
    if "ssl" in sys.modules or any(m in sys.modules for m in _TLS_USERS):
        return importlib.import_module(module)
    sys.modules["ssl"] = None  # type: ignore[assignment]  # `import ssl` raises ImportError
    try:
        return importlib.import_module(module)
    finally:
        if sys.modules.get("ssl", 0) is None:
            del sys.modules["ssl"]
