"""The reference kernel's bounds on the JSON it takes and keeps.

The Context of ADR 0077: "a resume payload cannot be rejected retroactively. Once appended it
is a permanent fold input." So a value too deep or too large for every later read to
walk is refused at ingress, before the append, never discovered by the fold. The ADRs
name no limit: these numbers are the reference's profile choice (spec/profiles.toml,
`ingress-limits`), and the suite requires none of them of another kernel, only that it
refuses with a typed reason and appends nothing, or accepts and stays readable
(`log.stays-readable`, corpus:hostile-payloads).

Depth counts containers as spec/canonical-json.md does: a scalar is 0 deep, `[0]` is 1.
"""

from __future__ import annotations

# Ingress: a caller's input, resume payload or options, and a flow program's JSON (its
# views aside, which are digested, never stored: ADR 0117 D1 lets them nest 1024 deep).
MAX_DEPTH = 128          # serde_json's default recursion limit: what a Rust peer parses
MAX_BYTES = 1 << 20      # UTF-8 bytes of the value's compact JSON text (1 MiB)

# The store: the kernel's own events hold a caller's value at most 2 levels down
# (EXECUTION_STARTED.input, a verdict's output inside DECISION_RECORDED.choice); the
# rest is headroom for a log another kernel wrote and the harness imports.
STORED_DEPTH = MAX_DEPTH + 8
# A folded state holds an event's payload at most 3 levels down (state, variables,
# _resumePayloads, the entry), so every state of a storable log is a storable snapshot.
STATE_WRAP = 3
SNAPSHOT_DEPTH = STORED_DEPTH + STATE_WRAP

__all__ = ["MAX_DEPTH", "MAX_BYTES", "STORED_DEPTH", "STATE_WRAP", "SNAPSHOT_DEPTH"]
