"""Conformance kits for the extension points third parties implement: event stores, resume
schemas (ADR 0077) and resume authenticators (ADR 0117 D2). Each kit is a
battery of cases, as data where it can be, that any implementation runs against."""
