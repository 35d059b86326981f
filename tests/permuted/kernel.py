"""The permuted reference: any driver (the reference, or a seeded mutant) wrapped so that the
inner driver does the work, everything it shows the harness is mapped through one consistent
view (view.py: every choice the ADRs leave open made the other way), and everything the
harness hands it is mapped back first. OwnDigestsDriver also digests views over a canonical
JSON of its own."""

from __future__ import annotations

from typing import Any, Callable

from permuted.view import FINISHED, JSON, MARK, NODE, REASONS, hide_log, hide_state, message_out, show_log, show_state


class PermutedDriver:
    """The inner driver behind the permuted view (see the module's docstring)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:  # optional operations the wrapper has nothing to change in
        return getattr(self.inner, name)

    def hello(self) -> Any:
        hello = self.inner.hello()
        data = hello.model_dump() if hasattr(hello, "model_dump") else dict(hello)
        return {**data, "name": f"permuted({data.get('name')})"}

    # -- operations that may refuse ---------------------------------------------------
    def _outcome(self, outcome: Any, operation: str) -> Any:
        from loomcheck.contract.driver import Outcome

        if getattr(outcome, "ok", True):
            return outcome
        reason = REASONS.get(operation, {}).get(outcome.reason, outcome.reason)
        # Other words, but ADR 0077's refusal of a malformed payload still names the offending field.
        return Outcome.refused(outcome.error, reason, f"the permuted kernel says no ({reason}); "
                                                      f"in the inner kernel's words: {outcome.message}")

    def define_flow(self, flow_id: str, program: JSON) -> Any:
        return self._outcome(self.inner.define_flow(flow_id, program), "define_flow")

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Any:
        return self._outcome(self.inner.start(execution_id, flow_id, input), "start")

    def resume(self, execution_id: str, event_type: str, payload: JSON, options: JSON = None) -> Any:
        call: Callable[..., Any] = self.inner.resume
        outcome = call(execution_id, event_type, payload, options) if options else call(execution_id, event_type, payload)
        if not outcome.ok and outcome.reason == "not-suspended" and self._finished(execution_id):
            from loomcheck.contract.driver import Outcome

            # A finished execution's resume named by its state (ADR 0104 D4 names only the unparked case).
            outcome = Outcome.refused(outcome.error, "terminal", outcome.message)
        return self._outcome(outcome, "resume")

    def _finished(self, execution_id: str) -> bool:
        try:
            state = self.inner.read_state(execution_id)
        except Exception:  # noqa: BLE001 - an execution the kernel does not know: nothing to rename
            return False
        return isinstance(state, dict) and state.get("status") in FINISHED

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON, options: JSON = None) -> Any:
        call: Callable[..., Any] = self.inner.resume_as
        outcome = call(execution_id, flow_id, event_type, payload, options) if options \
            else call(execution_id, flow_id, event_type, payload)
        return self._outcome(outcome, "resume_as")

    def recover(self, execution_id: str) -> Any:
        return self._outcome(self.inner.recover(execution_id), "recover")

    def configure(self, config: JSON) -> Any:
        return self._outcome(self.inner.configure(config), "configure")

    def load(self, execution_id: str, events: JSON, snapshot: JSON) -> Any:
        return self._outcome(self.inner.load(execution_id, hide_log(events), hide_state(snapshot)), "load")

    def append_events(self, execution_id: str, events: JSON) -> Any:
        return self._outcome(self.inner.append_events(execution_id, hide_log(events)), "append_events")

    def truncate_prefix(self, execution_id: str, upto: int) -> Any:
        return self._outcome(self.inner.truncate_prefix(execution_id, upto), "truncate_prefix")

    # -- what the harness reads -------------------------------------------------------
    def read_log(self, execution_id: str) -> list[dict]:
        return show_log(self.inner.read_log(execution_id))

    def read_state(self, execution_id: str) -> Any:
        return show_state(self.inner.read_state(execution_id))

    def fold(self, events: JSON, snapshot: JSON) -> Any:
        return show_state(self.inner.fold(hide_log(events), hide_state(snapshot)))

    def warnings(self) -> list[dict]:
        return [_warning_out(w) for w in self.inner.warnings()]

    # -- passed through unchanged (named, so the interface is visible here) ------------
    def reset(self) -> None:
        self.inner.reset()

    def recover_abandoned(self) -> list[str]:
        return self.inner.recover_abandoned()

    def restart(self) -> None:
        self.inner.restart()

    def advance_clock(self, ms: int) -> list[str]:
        return self.inner.advance_clock(ms)

    def parked_at_sequence(self, execution_id: str) -> int | None:
        return self.inner.parked_at_sequence(execution_id)

    def effects(self, execution_id: str) -> list[dict]:
        return self.inner.effects(execution_id)

    def erase(self, execution_id: str) -> None:
        self.inner.erase(execution_id)

    def close(self) -> None:
        self.inner.close()


def _warning_out(warning: Any) -> Any:
    """A warning with a field of the kernel's own and its free-text `why`s in other words."""
    if not isinstance(warning, dict):
        return warning
    shown = {**warning, NODE: MARK}
    if isinstance(shown.get("entries"), list):
        shown["entries"] = [{**e, "why": message_out(e["why"])} if isinstance(e, dict) and "why" in e else e
                            for e in shown["entries"]]
    return shown


class OwnDigestsDriver(PermutedDriver):
    """The permuted reference that also digests a gate's view over canonical JSON of its own
    (sorted keys, but `json.dumps`'s separators and ASCII escapes: not spec/canonical-json.md),
    as ADR 0117 D1 leaves the bytes to the implementation ("SHA-256 over canonicalJson"). The
    inner kernel is handed each view's digest verbatim; the code versions it then records (of
    the program it was handed) are shown as those of the program the harness defined.

    approvals.digest-bytes disagrees with it, as a profile check should; every ADR check passes
    (a regression log's echo of loomcheck's digest is sent as the kernel's, run/replay.py)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.versions: dict[str, str] = {}  # inner code version -> the harness's

    def define_flow(self, flow_id: str, program: JSON) -> Any:
        from loomcheck.spec.canonical import CanonicalError
        from loomcheck.spec.versions import code_version

        handed = _own_digests(program)
        if handed is not program:
            try:
                self.versions[code_version(handed)] = code_version(program)
            except CanonicalError:
                handed = program
        return super().define_flow(flow_id, handed)

    def _versions(self, value: Any, mapping: dict[str, str]) -> Any:
        return mapping.get(value, value) if isinstance(value, str) else value

    def read_log(self, execution_id: str) -> list[dict]:
        return [_versioned(e, self.versions) for e in super().read_log(execution_id)]

    def read_state(self, execution_id: str) -> Any:
        return _state_versioned(super().read_state(execution_id), self.versions)

    def fold(self, events: JSON, snapshot: JSON) -> Any:
        back = {v: k for k, v in self.versions.items()}
        hidden = [_versioned(e, back) for e in events] if isinstance(events, list) else events
        return _state_versioned(super().fold(hidden, _state_versioned(snapshot, back)), self.versions)

    def load(self, execution_id: str, events: JSON, snapshot: JSON) -> Any:
        back = {v: k for k, v in self.versions.items()}
        hidden = [_versioned(e, back) for e in events] if isinstance(events, list) else events
        return super().load(execution_id, hidden, _state_versioned(snapshot, back))


def _own_digest(view: Any) -> str:
    import hashlib
    import json

    from loomcheck.spec.files import json_headroom

    with json_headroom():
        text = json.dumps(view, sort_keys=True, ensure_ascii=True)
    return "v2:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _own_digests(program: Any) -> Any:
    """The program with each digestible view replaced by its digest, declared verbatim; the
    program itself when there is none (or when a view cannot be digested: the kernel refuses it)."""
    from loomcheck.spec.canonical import CanonicalError, canonical_json

    if not isinstance(program, dict) or not isinstance(program.get("body"), list):
        return program
    changed = False

    def digested(op: Any) -> Any:
        nonlocal changed
        if not (isinstance(op, dict) and op.get("op") == "suspend" and "view" in op and "viewDigest" not in op):
            return op
        try:
            canonical_json(op["view"])
            digest = _own_digest(op["view"])
        except (CanonicalError, RecursionError, TypeError, ValueError):
            return op
        changed = True
        return {**{k: v for k, v in op.items() if k != "view"}, "viewDigest": digest}

    body = []
    for op in program["body"]:
        if isinstance(op, dict) and op.get("op") == "parallel" and isinstance(op.get("branches"), list):
            op = {**op, "branches": [digested(b) for b in op["branches"]]}
        body.append(digested(op))
    return {**program, "body": body} if changed else program


def _versioned(event: Any, mapping: dict[str, str]) -> Any:
    if not isinstance(event, dict) or not isinstance(event.get("payload"), dict):
        return event
    fields = {"EXECUTION_STARTED": ("version",), "EXECUTION_MIGRATED": ("fromVersion", "toVersion")}.get(event.get("type"), ())
    payload = {k: (mapping.get(v, v) if k in fields and isinstance(v, str) else v) for k, v in event["payload"].items()}
    return {**event, "payload": payload}


def _state_versioned(state: Any, mapping: dict[str, str]) -> Any:
    if isinstance(state, dict) and isinstance(state.get("codeVersion"), str):
        return {**state, "codeVersion": mapping.get(state["codeVersion"], state["codeVersion"])}
    return state
