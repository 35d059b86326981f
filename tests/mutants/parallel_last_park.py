"""ctx.parallel records the LAST branch's park instead of the first called, so
suspend points in one parallel are answered out of call order."""

from __future__ import annotations

from mutants._parallel import driver_recording


def make():
    return driver_recording(lambda parks: parks[-1])
