"""Broken kernels, each wrong in one way a real adapter can be."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver


def factory_raises():
    raise RuntimeError("cannot connect to the kernel")


class CrashesOnResume(ReferenceDriver):
    def resume(self, execution_id, event_type, payload):
        raise KeyError("boom")


class GarbageLog(ReferenceDriver):
    def read_log(self, execution_id):
        return "not a list"


class LyingHello(ReferenceDriver):
    def hello(self):
        return {"name": "liar", "eventSchema": "one point twenty"}


class NotAnOutcome(ReferenceDriver):
    def start(self, execution_id, flow_id, input):
        super().start(execution_id, flow_id, input)
        return "started!"


def crashes_on_resume():
    return CrashesOnResume(store="memory")


def garbage_log():
    return GarbageLog(store="memory")


def lying_hello():
    return LyingHello(store="memory")


def not_an_outcome():
    return NotAnOutcome(store="memory")


def not_a_driver():
    return object()
