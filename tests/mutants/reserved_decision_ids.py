"""The reserved namespace left open: flow and effect code may record decisions
under __loom_ ids (by emit or ctx.decide), so a program can forge an operator's
in-doubt verdict or the legacy override. Effect ids are still rewritten and
conflicts still refused."""

from __future__ import annotations

from loomcheck.reference import context, emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver

_decision = emitguard._decision


def _decision_unreserved(payload, decisions, scope, reserved):
    return _decision(payload, decisions, scope, "\0no reserved prefix")


class UnreservedContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        emitguard._decision = _decision_unreserved
        try:
            return super().emit(event_type, payload, scope)
        finally:
            emitguard._decision = _decision

    def decide(self, decision_id, choice):
        original = context.check_decide
        context.check_decide = lambda decision_id: None
        try:
            return super().decide(decision_id, choice)
        finally:
            context.check_decide = original


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=UnreservedContext)
