"""Hypothesis settings for the project's own tests. Registered and loaded here so
that CI=true (which would load Hypothesis's built-in `ci` profile) does not change
how the tests behave: derandomised, no example database, no deadlines on a
shared machine. LOOMCHECK_TEST_PROFILE=explore randomises for a local hunt."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("loomcheck-tests", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=1_000)
settings.load_profile(os.environ.get("LOOMCHECK_TEST_PROFILE", "loomcheck-tests"))
