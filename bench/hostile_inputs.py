"""A hostile-input campaign against the reference kernel on SQLite: starts and resumes (and a few
resumeAs, recoveries and configurations) built to break it, each judged the moment it returns
(docs/bench.md#outside-the-sections).

    python -m loomcheck.bench.hostile_inputs                      # 110 000 operations (101 000 starts and resumes)
    python -m loomcheck.bench.hostile_inputs -n 2000 --seed 7 --json out.json"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from loomcheck.fuzz.hostile import ALL as HOSTILE_NAMES, nested
from loomcheck.contract.driver import Outcome
from loomcheck.reference.approvals import sign_resume
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.limits import MAX_BYTES, MAX_DEPTH
from loomcheck.spec.vocabulary import kernel_event_types, refusals

JSON = Any
ERRORS = {r.reason: r.error for r in refusals().refusal}
ACTOR, SECRET = "ann", "ann-current-secret-02"
VIEW = {"diff": ["-a", "+b"], "risk": 3}
FLOWS: dict[str, dict[str, JSON]] = {
    "plain": {"body": [{"op": "suspend", "on": "go"}, {"op": "observe"}, {"op": "complete", "output": "done"}]},
    "viewed": {"body": [{"op": "suspend", "on": "review", "view": VIEW}, {"op": "complete"}]},
    "approval": {"body": [{"op": "suspend", "on": "approve", "view": VIEW}, {"op": "complete"}]},
    "typed": {"body": [{"op": "suspend", "on": "answer"}, {"op": "observe"}, {"op": "complete"}],
              "resumeSchemas": {"answer": {"type": "object", "properties": {"approved": {"type": "boolean"}},
                                           "required": ["approved"]}}},
    "timed": {"body": [{"op": "suspend", "on": "wait", "timeout": 1000}, {"op": "complete"}]},
    "human": {"body": [{"op": "step", "id": "review", "kind": "human"}, {"op": "complete"}]},
    "twice": {"body": [{"op": "step", "id": "a", "output": {"n": 1}}, {"op": "suspend", "on": "go1"},
                       {"op": "suspend", "on": "go2"}, {"op": "complete"}]},
}
GATES = ("go", "review", "approve", "answer", "wait", "HumanInput", "go1", "go2")
CONFIG = {"authenticator": {"gates": ["approve"], "keys": {ACTOR: SECRET}}}
PER_FLOW = 3      # parked executions of each flow after a refresh
REFRESH = 250     # operations between refreshes: logs stay short, so the rate stays even
NOT_TEXT: tuple[JSON, ...] = (None, 0, 5, -1, 1.5, True, [], ["go"], {}, {"go": 1}, "\ud800", "go\udfff", "\udc00")


@dataclass
class Tally:
    """What the campaign counted; `problems` holds the first few, each with its operation number."""

    operations: int = 0
    kinds: Counter = field(default_factory=Counter)
    accepted: int = 0
    refused: Counter = field(default_factory=Counter)
    mistaken_appends: int = 0   # a refusal that changed the file
    crashes: int = 0            # an exception instead of an Outcome
    untyped: int = 0            # a refusal whose reason or error type the catalogue does not name so
    unreadable: int = 0         # an acceptance after which the execution does not read or fold back
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not (self.mistaken_appends or self.crashes or self.untyped or self.unreadable)

    def to_json(self) -> dict[str, JSON]:
        """The tally as plain JSON (dataclasses.asdict would rebuild a Counter from its items)."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return {**data, "kinds": dict(self.kinds), "refused": dict(self.refused.most_common())}

    def problem(self, kind: str, text: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.problems) < 10:
            self.problems.append(f"#{self.operations} {kind}: {text[:400]}")


class Values:
    """The menus of hostile arguments, all drawn from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.kernel_types = sorted(kernel_event_types())
        self.signable = True  # whether the last payload is small enough to sign (a proof costs its size)

    def pick(self, *menu: Callable[[], JSON]) -> JSON:
        return self.rng.choice(menu)()

    def text(self, plausible: tuple[str, ...]) -> JSON:
        """An id, a type or a flow id: mostly plausible, else hostile."""
        rng = self.rng
        return self.pick(lambda: rng.choice(plausible), lambda: rng.choice(plausible),
                         lambda: rng.choice(HOSTILE_NAMES), lambda: rng.choice(NOT_TEXT),
                         lambda: rng.choice(self.kernel_types), lambda: "x" * (MAX_BYTES + rng.randint(-2, 2)))

    def payload(self, digest: str | None = None) -> JSON:
        rng = self.rng
        self.signable = rng.random() < 0.97
        if not self.signable:  # the large ones, rarely: an accepted one is folded on every later read
            return self.large()
        return self.pick(
            lambda: {"approved": rng.random() < 0.5},
            lambda: {"approved": True, "viewDigest": digest or "v2:" + "0" * 64},
            lambda: {"approved": True, "viewDigest": rng.choice(["v2:" + "f" * 64, "v1:0", 5, None, digest or ""])},
            lambda: rng.choice([None, "text", 3, [1, 2], {}, -0.0, 1e308, 2**70, -(2**64) - 1]),
            self.deep, self.deep, self.not_json, self.keyed, self.mixed,
        )

    def deep(self) -> JSON:
        levels = self.rng.choice([MAX_DEPTH - 3, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 8,
                                  500, 700, 980, 1000, 5000])
        leaf = self.rng.choice([0, "leaf", None, {"approved": True}, float("nan")])
        return nested(self.rng.choice(["array", "object"]), levels, leaf)

    def large(self) -> JSON:
        """About the size bound: a string whose JSON text is within a few bytes of it, or many members."""
        rng = self.rng
        near = MAX_BYTES + rng.randint(-4, 4)
        return self.pick(lambda: "x" * (near - 2), lambda: {"approved": True, "note": "é" * (near // 2 - 20)},
                         lambda: list(range(near // 7)), lambda: "y" * (4 * MAX_BYTES))

    def not_json(self) -> JSON:
        rng = self.rng
        return rng.choice([float("nan"), float("inf"), {"a": [float("-inf")]}, {1: "an int key"}, {"a": {2: 3}},
                           {"a": {1, 2}}, b"bytes", {"a": object()}, ("a", "tuple"), {"k": [1, {"n": float("nan")}]}])

    def keyed(self) -> JSON:
        rng = self.rng
        name = rng.choice(HOSTILE_NAMES)
        return rng.choice([{name: True}, {"__proto__": {"polluted": True}}, {"constructor": {"prototype": {"x": 1}}},
                           {"a\udfffb": 1}, {"a": "x\ud800y"}, {name: {name: [name]}}])

    def mixed(self, depth: int = 0) -> JSON:
        """A small random JSON-ish tree whose leaves may be hostile."""
        rng = self.rng
        if depth > 4 or rng.random() < 0.3:
            return rng.choice([None, True, 1, -7, 0.5, "s", "\ud800", float("nan"), 2**64, rng.choice(HOSTILE_NAMES)])
        if rng.random() < 0.5:
            return [self.mixed(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(["a", "b", "__proto__", "constructor", "\udfff"]): self.mixed(depth + 1)
                for _ in range(rng.randint(0, 3))}

    def options(self, proof: Callable[[], JSON]) -> JSON:
        rng = self.rng
        if rng.random() < 0.55:
            return None
        return self.pick(
            proof, proof, proof,
            lambda: rng.choice([5, "options", [], True, {"proof": "x"}, {"proof": [1]}]),
            lambda: {"principal": rng.choice([{"actor": ACTOR}, {"actor": 5}, "ann", None, self.deep()])},
            lambda: {"discardLegacyAnswers": rng.choice([{"stepId": "review", "count": 1}, {"stepId": 5}, "all",
                                                        {"stepId": "review", "count": -1}, True, self.mixed()])},
            lambda: {"transformState": rng.choice([{"name": "wrap", "key": "k"}, {"name": "__proto__"},
                                                   {"name": "default", "field": "f", "value": self.deep()},
                                                   {"name": "fail"}, "wrap", self.mixed()])},
        )

    def config(self) -> JSON:
        rng = self.rng
        return rng.choice([None, 5, [], {"strict": "yes"}, {"authenticator": 5}, {"authenticator": {"gates": "go"}},
                           {"authenticator": {"gates": ["go"], "keys": {ACTOR: None}}},
                           {"authenticator": {"gates": ["go"], "keys": {ACTOR: []}}},
                           {"authenticator": {"gates": [5], "keys": {}}}, {"requireResumeAuthenticator": 0},
                           {"authenticator": {"gates": ["go"], "keys": {ACTOR: SECRET}, "requireActor": "no"}},
                           {"authenticator": {"gates": ["go"], "keys": {ACTOR: "short"}}}, self.deep()])


class Campaign:
    def __init__(self, seed: int, kernel: Callable[[], ReferenceDriver] = lambda: ReferenceDriver(store="sqlite")) -> None:
        self.rng = random.Random(seed)
        self.values = Values(self.rng)
        self.driver = kernel()  # on SQLite: the file is read behind its back
        self.reader = sqlite3.connect(self.driver.store.path, isolation_level=None)  # type: ignore[attr-defined]
        self.live: list[str] = []
        self.fresh = 0
        self.tally = Tally()

    def close(self) -> None:
        self.reader.close()
        self.driver.close()

    # -- the population ---------------------------------------------------------------
    def refresh(self) -> None:
        driver = self.driver
        driver.reset()
        assert driver.configure(CONFIG).ok
        for flow, program in FLOWS.items():
            assert driver.define_flow(flow, program).ok, flow
        self.live = []
        for flow in FLOWS:
            for n in range(PER_FLOW):
                execution = f"p-{flow}-{n}"
                assert driver.start(execution, flow, {"n": n}).ok
                self.live.append(execution)

    # -- one operation ----------------------------------------------------------------
    def operation(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.45:
            kind, execution, call = self.start()
        elif roll < 0.92:
            kind, execution, call = self.resume()
        elif roll < 0.96:
            kind, execution, call = self.resume_as()
        elif roll < 0.98:
            execution = self.target()
            kind, call = "recover", lambda: self.driver.recover(execution)
        else:
            config = self.values.config()
            kind, execution, call = "configure", None, lambda: self.driver.configure(config)
        self.tally.operations += 1
        self.tally.kinds[kind] += 1
        self.judge(kind, execution, call)

    def target(self) -> JSON:
        return self.rng.choice(self.live) if self.rng.random() < 0.85 else self.values.text(tuple(self.live[:3]))

    def start(self) -> tuple[str, JSON, Callable[[], Outcome]]:
        rng = self.rng
        if rng.random() < 0.7:
            self.fresh += 1
            execution: JSON = f"s-{self.fresh}"
        else:
            execution = self.values.text(tuple(self.live[:3]) + ("s-new",))
        flow = self.values.text(tuple(FLOWS)) if rng.random() < 0.3 else rng.choice(list(FLOWS))
        value = self.values.payload() if rng.random() < 0.8 else {"n": rng.randint(0, 9)}
        return "start", execution, lambda: self.driver.start(execution, flow, value)

    def resume(self) -> tuple[str, JSON, Callable[[], Outcome]]:
        execution = self.target()
        state = self.state(execution)
        parked = (state.get("suspendedOn") or {}) if state.get("status") == "suspended" else {}
        gate = parked.get("on")
        event_type = gate if isinstance(gate, str) and self.rng.random() < 0.45 else self.values.text(GATES)
        payload = self.values.payload(parked.get("viewDigest"))
        options = self.values.options(lambda: self.proof(execution, event_type, payload))
        return "resume", execution, lambda: self.driver.resume(execution, event_type, payload, options)

    def resume_as(self) -> tuple[str, JSON, Callable[[], Outcome]]:
        execution = self.target()
        flow = self.rng.choice(list(FLOWS)) if self.rng.random() < 0.8 else self.values.text(tuple(FLOWS))
        event_type = self.values.text(GATES)
        payload = self.values.payload()
        options = self.values.options(lambda: {"transformState": {"name": "wrap", "key": "k"}})
        return "resume-as", execution, lambda: self.driver.resume_as(execution, flow, event_type, payload, options)

    def proof(self, execution: JSON, event_type: JSON, payload: JSON) -> JSON:
        """A proof for the event as sent (valid when the event is signable), or one tampered with."""
        rng = self.rng
        park = self.driver.parked_at_sequence(execution) if isinstance(execution, str) else None
        exp = self.driver.clock.now() + rng.choice([60_000, 60_000, -1, 0])
        try:
            if not self.values.signable:
                raise ValueError("too large to sign here")
            signed = sign_resume({"type": event_type, "payload": payload}, actor=ACTOR, secret=SECRET, exp=exp,
                                 execution_id=execution, parked_at_sequence=park or rng.randint(1, 9))
            proof = signed["proof"]
        except Exception:  # noqa: BLE001 - an unsignable event gets a made-up proof
            proof = {"actor": ACTOR, "exp": exp, "signature": "0" * 64}
        tamper = rng.random()
        if tamper < 0.5:
            return {"proof": proof}
        signature = proof["signature"]
        return {"proof": rng.choice([
            {**proof, "signature": ("1" if signature[0] == "0" else "0") + signature[1:]},
            {**proof, "signature": signature[:-1]}, {**proof, "signature": signature.upper()},
            {**proof, "actor": "bob"}, {**proof, "exp": str(exp)}, {**proof, "exp": 1.5},
            {"actor": ACTOR}, {"signature": signature}, None, "proof", [proof], {**proof, "actor": "\ud800"}])}

    def state(self, execution: JSON) -> dict[str, JSON]:
        return self.driver.read_state(execution) if isinstance(execution, str) else {}

    # -- the judgement ----------------------------------------------------------------
    def rows(self, execution: JSON) -> list[tuple[Any, ...]]:
        """The execution's rows exactly as the file holds them (text, not a parse of it)."""
        if not isinstance(execution, str):
            return []
        try:
            events = self.reader.execute("SELECT seq, type, payload FROM events WHERE execution_id = ? ORDER BY seq",
                                         (execution,)).fetchall()
            snapshot = self.reader.execute("SELECT seq, state FROM snapshots WHERE execution_id = ?",
                                           (execution,)).fetchall()
        except (sqlite3.Error, UnicodeEncodeError):
            return []  # an id no file can hold names no rows
        return events + [("snapshot", *row) for row in snapshot]

    def version(self) -> int:
        return self.reader.execute("PRAGMA data_version").fetchone()[0]

    def judge(self, kind: str, execution: JSON, call: Callable[[], Outcome]) -> None:
        tally = self.tally
        before, version = self.rows(execution), self.version()
        try:
            outcome = call()
        except Exception as exc:  # noqa: BLE001 - a crash is what the campaign counts
            tally.problem("crashes", f"{kind} {execution!r:.60} raised {type(exc).__name__}: {exc}")
            return
        if not isinstance(outcome, Outcome):
            tally.problem("crashes", f"{kind} {execution!r:.60} returned {outcome!r:.80}, not an Outcome")
            return
        if not outcome.ok:
            tally.refused[outcome.reason] += 1
            if ERRORS.get(outcome.reason or "") != outcome.error:
                tally.problem("untyped", f"{kind} refused {outcome.error} {outcome.reason}")
            if self.rows(execution) != before or self.version() != version:
                tally.problem("mistaken_appends", f"{kind} {execution!r:.60} refused {outcome.reason} but the "
                                                  f"file changed")
            return
        tally.accepted += 1
        if kind == "configure":  # a malformed configuration taken: put the campaign's back
            self.driver.configure(CONFIG)
            return
        if isinstance(execution, str):
            self.readable(kind, execution, before)
            if kind == "start" and len(self.live) < 64:
                self.live.append(execution)

    def readable(self, kind: str, execution: str, before: list[tuple[Any, ...]]) -> None:
        try:
            after = self.rows(execution)
            state = self.driver.read_state(execution)
            folded = self.driver.fold(self.driver.read_log(execution), None)
        except Exception as exc:  # noqa: BLE001
            self.tally.problem("unreadable", f"{kind} {execution!r:.60} accepted, then {type(exc).__name__}: {exc}")
            return
        if after[:len(before)] != before or folded != state:
            self.tally.problem("unreadable", f"{kind} {execution!r:.60} accepted: the log was rewritten or the "
                                             f"state is not its fold")


def run(operations: int, seed: int = 0,
        kernel: Callable[[], ReferenceDriver] = lambda: ReferenceDriver(store="sqlite")) -> Tally:
    """`operations` hostile operations on `kernel()` (a ReferenceDriver on SQLite, or a seeded mutant of it)."""
    campaign = Campaign(seed, kernel)
    began, cpu = time.perf_counter(), time.process_time()
    try:
        while campaign.tally.operations < operations:
            if campaign.tally.operations % REFRESH == 0:
                campaign.refresh()
            campaign.operation()
        for execution in campaign.driver.store.executions():  # a last sweep: everything stored reads
            campaign.readable("final read", execution, [])
    finally:
        campaign.close()
    campaign.tally.seconds = round(time.perf_counter() - began, 1)
    campaign.tally.cpu_seconds = round(time.process_time() - cpu, 1)
    return campaign.tally


def figures(tally: Tally) -> str:
    starts_and_resumes = tally.kinds["start"] + tally.kinds["resume"]
    lines = [f"operations        {tally.operations:>9,}  ({starts_and_resumes:,} starts and resumes; "
             + ", ".join(f"{k} {n:,}" for k, n in sorted(tally.kinds.items())) + ")",
             f"accepted          {tally.accepted:>9,}",
             f"refused           {sum(tally.refused.values()):>9,}  ("
             + ", ".join(f"{r} {n:,}" for r, n in tally.refused.most_common()) + ")",
             f"appends by mistake{tally.mistaken_appends:>9,}  (want 0)",
             f"crashes           {tally.crashes:>9,}  (want 0)",
             f"untyped refusals  {tally.untyped:>9,}  (want 0)",
             f"unreadable after  {tally.unreadable:>9,}  (want 0)",
             f"time              {tally.seconds:>9} s wall, {tally.cpu_seconds} s CPU, "
             f"{tally.operations / max(tally.seconds, 0.001):,.0f} operations/s"]
    return "\n".join(lines + tally.problems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loomcheck.bench.hostile_inputs", description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--operations", type=int, default=110_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the tally as JSON")
    args = parser.parse_args(argv)
    tally = run(args.operations, args.seed)
    print(figures(tally))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"seed": args.seed, **tally.to_json()}, out, indent=2)
    return 0 if tally.clean else 1


if __name__ == "__main__":
    sys.exit(main())
