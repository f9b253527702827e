"""What the attached console's process leaves out of memory: the one place that decides it.

The console is a long-lived process on a training node, beside nvitop; every MiB it holds is
held for days (docs/benchmarks.md, ``ui``). Textual runs on asyncio, and asyncio's event loop
imports :mod:`ssl` at import time for TLS connections the console never makes: that loads
OpenSSL's libcrypto and libssl, about 4 MiB of resident memory and 7-15 ms of start-up. Nothing in
the UI opens a TLS connection (it reads files and a UNIX control socket; webhooks are the
runner's), so the UI is imported with :mod:`ssl` held back: asyncio then records that TLS is
unavailable (``ssl = None``, its documented fallback when Python is built without OpenSSL).
The hold is lifted right after, so a later ``import ssl`` in the same process works as usual.

glibc's malloc gives each thread that allocates an arena of its own (up to eight per core), and
each arena touches pages of its own. The console's threads (Textual's input and output threads,
the poll worker) allocate little and seldom at the same moment, so the attached console asks for
one arena (``one_malloc_arena``) before any thread starts: 0.7 MiB less resident memory, no
change in CPU (docs/benchmarks.md, ``ui``).

Textual's ``Strip.divide`` kept a line that one widget fills in the line's own cache: every line
a widget drew and the compositor cut was a reference cycle, with its seven caches and its
segments, freed only by Python's cyclic collector (about 500 lines, 8,500 objects every 10 s on
the 8-GPU run screen). ``lines_without_cycles`` (every ``MoeConsole``) answers that division
without the cache, so a line goes when the next refresh replaces it; what the cyclic collector
then finds in 10 s of the run screen is a few dozen objects (ctypes' array types of the NVML
reads, Textual's worker bookkeeping). ``settle_after_first_frame`` (armed by ``attach``, called
by the run screen once its first frame is drawn) collects the start's garbage once and freezes
what is alive then (the modules, the app, its screen): the collections after it look only at
what was made since. The collector keeps Python's thresholds: a full pass at most every hundredth
young collection (one every minute or so), where it had run every fourth (``(1, 1)``), about a
tenth of the run screen's CPU, when the lines were cycles (docs/benchmarks.md, ``ui``).

Textual's partial update (what a refresh changed) takes one crop around every changed region and
has every widget that crop touches render all its rows; the run screen's status line (top) and
log tail and host line (bottom) change every second, so every widget between them was drawn
again every second for nothing. ``updates_by_rows`` (every ``MoeConsole``) draws the changed
rows band by band, each widget only for the rows it has in a band, and writes the same lines.

Rich and Textual cache, module-wide and bounded, what they compute for each text drawn and each
place cut (``drawing_caches``); every refresh brings new texts (the clock, the host line, a new
log line), so a long-lived console held them at their bounds: the run screen grew from 38.9 to
41.9 MiB in its first 300 s and was still climbing (``Segment._split_cells`` alone may hold
16,384 entries of three segments). The console empties them every ``TRIM_CACHES_EVERY_S``
(``MoeConsole``): what a refresh needs is cached again by the next one, and then hands the
heap's free pages back to the kernel (``release_free_heap``, glibc's ``malloc_trim``): what a
refresh frees in the middle of the heap otherwise stays resident, 0.5 MiB on the run screen.
"""
from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.strip import Strip

# Modules whose import-time ``try: import ssl / except ImportError: ssl = None`` binds TLS
# support once (CPython 3.11 asyncio/base_events.py:33-36, selector_events.py:15-19,
# sslproto.py:4-7).
_TLS_USERS = ("asyncio",)


_M_ARENA_MAX = -8  # glibc malloc.h: mallopt's parameter for the most arenas malloc creates


def one_malloc_arena() -> bool:
    """Make every thread of this process allocate from glibc's main arena; call it before any
    thread starts (a thread keeps the arena it first allocated from). False where the C library
    is not glibc (mallopt missing, or the parameter refused): nothing changed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):   # musl and others: no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_ARENA_MAX, 1))


_settle_armed = False


def settle_after_first_frame(arm: bool | None = None) -> bool:
    """``arm=True`` (``attach``, in its own process): the next call without it, once the first
    frame is drawn, collects the garbage of the start and freezes what is alive then
    (``gc.freeze``: out of every later collection's count and scan). Python's thresholds stay:
    the drawn lines are no cycles (``lines_without_cycles``), so nothing piles up for the full
    pass. Only the first call after arming does anything: True then. ``arm=False`` disarms. A
    test process or an embedding program never arms it, so nothing of theirs is frozen."""
    global _settle_armed
    if arm is not None:
        _settle_armed = arm
        return False
    if not _settle_armed:
        return False
    _settle_armed = False
    gc.collect()
    gc.freeze()
    # A full pass now, over nothing: the collector counts the long-lived objects again (none
    # outside the freeze), so a full pass is held back for a quarter of those made since, not
    # of the start's (about 100k).
    gc.collect()
    return True


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


# What Textual's ``key_to_character`` (textual/keys.py:312) answers for the named keys the
# console binds (console/keys.py) and the widgets on its screens bind (tab, enter, the arrows).
# Textual asks it for every key of the binding chain whenever the screen's bindings are read
# (``Screen._binding_chain``: the key footer, each key press), and for a name of more than one
# character it asks ``unicodedata.lookup``, whose name tables then stay resident: 0.7 MiB of the
# attached console (a miss, "enter" or "minus", searches them). The same answers, from a table:
# tests/console/test_console_lean.py checks each against Textual's own function.
KEY_CHARACTERS: dict[str, str | None] = {
    "backspace": "\x08", "comma": ",", "delete": "\x7f", "down": None, "end": None, "enter": None,
    "equals_sign": "=", "escape": "\x1b", "full_stop": ".", "greater_than_sign": ">", "home": None,
    "insert": None, "left": None, "less_than_sign": "<", "minus": None, "pagedown": None, "pageup": None,
    "plus": None, "question_mark": "?", "right": None, "slash": None, "space": " ", "tab": "\t", "up": None,
}


def known_key_characters() -> bool:
    """Let Textual's binding chain read the characters of the keys in ``KEY_CHARACTERS`` from
    the table (any other key: Textual's own answer). Idempotent; False if this Textual has no
    ``key_to_character`` where the binding chain reads it (nothing changed)."""
    import textual.screen
    original = getattr(textual.screen, "key_to_character", None)
    if original is None:
        return False
    if getattr(original, "moeconsole_table", False):
        return True

    def key_to_character(key: str) -> str | None:
        if key in KEY_CHARACTERS:
            return KEY_CHARACTERS[key]
        return original(key)
    setattr(key_to_character, "moeconsole_table", True)
    setattr(textual.screen, "key_to_character", key_to_character)
    return True


def lines_without_cycles() -> bool:
    """Have Textual's ``Strip.divide`` answer a division with no cut inside the line (the one cut
    at its end: the compositor's usual cut of a line that one widget fills) with the line itself,
    without caching that answer in the line: Textual's own keeps ``[self]`` in the line's
    ``_divide_cache`` (textual/strip.py, ``Strip.divide``), a reference cycle, so every such
    line drawn, with the caches and segments it holds, waited for the cyclic collector's full
    pass instead of going when the next refresh replaced it. Any other division is Textual's own,
    cached as before. Idempotent; False if this Textual's ``Strip`` has no ``divide`` (nothing
    changed)."""
    from textual.strip import Strip
    original = getattr(Strip, "divide", None)
    if original is None:
        return False
    if getattr(original, "moeconsole_no_cycle", False):
        return True

    def divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
        cell_length = self.cell_length
        cuts = [cut for cut in cuts if cut <= cell_length]
        if cuts == [cell_length]:
            return [self]
        return original(self, cuts)
    setattr(divide, "moeconsole_no_cycle", True)
    setattr(divide, "__doc__", original.__doc__)
    setattr(Strip, "divide", divide)
    return True


def updates_by_rows() -> bool:
    """Have Textual's compositor draw a partial update (what a refresh changed) row band by row
    band, each widget only for the rows of the band. Textual's own (textual/_compositor.py,
    ``Compositor.render_partial_update`` and ``_get_renders``) takes one crop around every
    changed region, and has each widget that crop touches render all its visible rows: on the
    run screen the status line at the top and the log tail and host line at the bottom change
    every second, so the four charts, the events, the GPU rows and the containers behind them
    were drawn again every second, whole, for lines no one changed (and the compositor kept
    none of them: only the changed rows are written). Here the changed rows are grouped in
    bands of consecutive rows; a band takes every column (the cuts of a line, where widgets
    begin and end, stay whole), a widget outside every band is not asked, and one across a band
    renders only the band's rows. The lines written are Textual's, cut at the same places.
    Idempotent; False if this Textual's compositor lacks what it replaces (nothing changed)."""
    from textual import _compositor
    from textual.geometry import Region
    compositor = getattr(_compositor, "Compositor", None)
    chops_update = getattr(_compositor, "ChopsUpdate", None)
    needed = ("render_partial_update", "_get_renders", "_render_chops", "_regions_to_spans",
              "visible_widgets", "cuts")
    if compositor is None or chops_update is None or not all(hasattr(compositor, n) for n in needed):
        return False
    if getattr(compositor.render_partial_update, "moeconsole_by_rows", False):
        return True
    whole_renders = compositor._get_renders

    def _get_renders(self: Any, crop: Region | None = None) -> Iterator[tuple[Region, Region, list[Strip]]]:
        if not crop:
            yield from whole_renders(self, crop)
            return
        top, bottom = crop.y, crop.bottom
        for widget, (region, clip) in self.visible_widgets.items():
            if not crop.overlaps(clip):
                continue
            first = max(clip.y, top)   # the crop's rows of the clip; its columns whole
            clip = Region(clip.x, first, clip.width, min(clip.bottom, bottom) - first)
            x, y, width, height = region.intersection(clip)
            if width and height:
                yield region, clip, widget.render_lines(Region(x - region.x, y - region.y, width, height))

    def render_partial_update(self: Any) -> Any:
        update_regions = self._dirty_regions.copy()
        self._dirty_regions.clear()
        if not update_regions:
            return None
        spans = list(self._regions_to_spans(update_regions))
        rows = sorted({y for y, _, _ in spans})
        if not rows:   # regions of no size: nothing to write
            return None
        rendered = set(rows).__contains__
        bands, start = [], rows[0]
        for before, y in zip(rows, rows[1:]):
            if y != before + 1:
                bands.append((start, before + 1))
                start = y
        bands.append((start, rows[-1] + 1))
        width = self.size.width
        chops: list = []
        for y0, y1 in bands:
            part = self._render_chops(Region(0, y0, width, y1 - y0), rendered)
            if not chops:
                chops = list(part)
            else:
                chops[y0:y1] = part[y0:y1]
        return chops_update(chops, spans, [cut_set[1:] for cut_set in self.cuts])
    setattr(render_partial_update, "moeconsole_by_rows", True)
    # Textual's own pair, for the test that compares what both write
    setattr(render_partial_update, "textual_own", (compositor.render_partial_update, whole_renders))
    setattr(compositor, "_get_renders", _get_renders)
    setattr(compositor, "render_partial_update", render_partial_update)
    return True


# How often the attached console empties the drawing caches of Rich and Textual that take an
# entry for each new text or place drawn (``trim_drawing_caches``).
TRIM_CACHES_EVERY_S = 30.0


def drawing_caches() -> list[Any]:
    """Rich's and Textual's module-level ``lru_cache``s that the console's refresh feeds an entry
    for every new text it draws or new place it cuts: a long-lived console fills them to their
    bounds, which is memory held for as long as the console runs (measured on the 8-GPU run
    screen: Rich's ``cached_cell_len``, the cell width of every text drawn, 16 new entries a second
    up to 4,096; ``Segment._split_cells``, every piece the compositor cut, up to 16,384 with three
    segments each; ``Region.translate``, ``intersection`` and ``overlaps`` up to 1,024 and 4,096).
    Each is a pure function of its arguments, so emptying it changes no result. Those this Rich or
    Textual does not have are left out."""
    import rich.cells
    import rich.segment
    from textual.geometry import Region
    found = [getattr(rich.cells, "cached_cell_len", None),
             getattr(getattr(rich.segment.Segment, "_split_cells", None), "__func__", None)]
    found += [getattr(Region, name, None) for name in ("translate", "intersection", "overlaps")]
    return [cache for cache in found if callable(getattr(cache, "cache_clear", None))]


def trim_drawing_caches() -> int:
    """Empty the ``drawing_caches``; the entries they held (what the next draws take again)."""
    held = 0
    for cache in drawing_caches():
        held += cache.cache_info().currsize
        cache.cache_clear()
    return held


_malloc_trim: list[Any] = []   # glibc's malloc_trim, looked up once ([None]: this C library has none)


def release_free_heap() -> bool:
    """Hand the pages of glibc's heap that hold only freed memory back to the kernel
    (``malloc_trim(0)``: the free top of the heap, and whole free pages inside it). A freed block
    that is not at the heap's top stays resident otherwise, and every refresh frees and makes
    texts, lines and records: measured on the 8-GPU run screen, 0.5 MiB less resident memory for
    the same objects, at no measurable CPU every 30 s (docs/benchmarks-ui.md). False where the C
    library is not glibc (nothing done)."""
    if not _malloc_trim:
        trim = None
        if sys.platform.startswith("linux"):
            import ctypes
            try:
                trim = ctypes.CDLL(None).malloc_trim
                trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):   # musl and others: no malloc_trim
                trim = None
        _malloc_trim.append(trim)
    trim = _malloc_trim[0]
    if trim is None:
        return False
    trim(0)
    return True


def trim_memory() -> int:
    """What the attached console does every ``TRIM_CACHES_EVERY_S``: the drawing caches emptied
    (``trim_drawing_caches``; the entries they held), then the freed heap given back
    (``release_free_heap``)."""
    held = trim_drawing_caches()
    release_free_heap()
    return held
