"""A kernel whose parallel always records the first-called branch's park, even
when a later branch is a human step: the mixed-parallel hazard does not
reproduce on it (the demonstration reports not-reproduced, never pass)."""

from __future__ import annotations

from mutants._parallel import driver_recording


def make():
    return driver_recording(lambda parks: parks[0])
