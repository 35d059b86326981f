"""Typed refusals. Each carries a stable reason from spec/refusals.toml; the
runtime raises them before appending anything (refuse before append)."""

from __future__ import annotations


class KernelRefusal(Exception):
    error = "KernelRefusal"

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.message = message or reason


class ResumeRefusedError(KernelRefusal):
    error = "ResumeRefusedError"


class ResumePayloadValidationError(KernelRefusal):
    error = "ResumePayloadValidationError"


class InputValidationError(KernelRefusal):
    error = "InputValidationError"


class FlowDefinitionError(KernelRefusal):
    error = "FlowDefinitionError"


class StateMigrationError(KernelRefusal):
    """ADR 0056 D3: a transform that raises or returns nothing refuses the migration."""

    error = "StateMigrationError"


class FlowCodeMismatchError(KernelRefusal):
    """K11: the recorded code version differs from the registered flow's."""

    error = "FlowCodeMismatchError"


class EmitRefusedError(KernelRefusal):
    """Raised inside a flow run; it fails the execution rather than refusing a caller."""

    error = "EmitRefusedError"


class ConfigError(KernelRefusal):
    """The runtime refuses to compose: strict without an authenticator, a weak secret (ADR 0117 D2, D3)."""

    error = "ConfigError"
