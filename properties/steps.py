"""What one step changed: the events it appended, and every log it may have touched."""

from __future__ import annotations

from loomcheck.contract.session import Step


def fresh(step: Step) -> list[dict]:
    """The events this operation appended."""
    return step.log_after[len(step.log_before):]


def logs_touched(step: Step) -> list[tuple[str, list[dict], list[dict]]]:
    """(execution, before, after) for every log the operation may have changed."""
    if step.others is not None:
        return [(x, before, after) for x, (before, after) in step.others.items()]
    if step.execution is None:
        return []
    return [(step.execution, step.log_before, step.log_after)]
