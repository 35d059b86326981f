"""Strict composes without a resume authenticator: any caller approves any gate
on a runtime that claims to fail closed (ADR 0117 D3)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver


class QuietDriver(ReferenceDriver):
    def configure(self, config):
        if isinstance(config, dict) and config.get("strict") is True and config.get("authenticator") is None:
            config = {**config, "requireResumeAuthenticator": False}
        return super().configure(config)


def make() -> ReferenceDriver:
    return QuietDriver(store="memory")
