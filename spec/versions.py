"""Code versions (K11): a flow program's version is "c1:" + the SHA-256 of its canonical JSON
as defined, and an execution is pinned to the version it started on (or last migrated to).
Standard library only: docs/spec-data.md, "Code versions"."""

from __future__ import annotations

import hashlib

from loomcheck.spec.canonical import MAX_DEPTH, canonical_json

VERSION_PREFIX = "c1:"
PROGRAM_MAX_DEPTH = MAX_DEPTH + 64
# Fields that carry code versions; a kernel that does not declare the "code-versions"
# feature is compared without them (run/replay.py).
VERSION_FIELDS = {"EXECUTION_STARTED": ("version",), "EXECUTION_MIGRATED": ("fromVersion", "toVersion")}


def code_version(program: object) -> str:
    """The code version of a flow program (as JSON). CanonicalError when it has no canonical form."""
    return VERSION_PREFIX + hashlib.sha256(canonical_json(program, PROGRAM_MAX_DEPTH).encode("utf-8")).hexdigest()


def pinned_version(events: list[dict[str, object]], snapshot: dict[str, object] | None = None) -> str | None:
    """The version an execution is pinned to by its log: the latest EXECUTION_MIGRATED's
    toVersion, else its EXECUTION_STARTED's version, else the snapshot's codeVersion;
    None for a log that records none."""
    for event in reversed(events):
        payload = event.get("payload")
        if not isinstance(payload, dict):
            continue
        if event.get("type") == "EXECUTION_MIGRATED":
            version = payload.get("toVersion")
            return version if isinstance(version, str) else None
        if event.get("type") == "EXECUTION_STARTED":
            version = payload.get("version")
            return version if isinstance(version, str) else None
    version = (snapshot or {}).get("codeVersion")
    return version if isinstance(version, str) else None
