"""The machine-readable specification: invariants, the event vocabulary and
EVENT_SCHEMA history, refusal reasons, the flow-program language and the
regression-log format, with their loaders and pydantic models."""
