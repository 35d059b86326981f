"""Seeded mutants of the reference kernel: each breaks one rule of the ADRs on
purpose, the way a real kernel could, and the suite must report it.
`--impl python:mutants.NAME:make` (with tests/ on the import path) plugs one in
like any other kernel. CATCHES says which invariants each must be caught by;
tests/test_mutants.py holds the suite to it, and requires every invariant in
the catalogue to be caught by at least one mutant."""

CATCHES: dict[str, tuple[str, ...]] = {
    "single_slot": ("gate.i-receives-entry-i", "gate.beyond-answers-parks", "gate.completes-after-n-answers"),
    "skipped_gate": ("gate.completes-after-n-answers", "gate.i-receives-entry-i"),
    "reversed_answers": ("fold.resume-payloads-ordered",),
    "no_legacy_fallback": ("gate.legacy-single-payload",),
    "rewriting_store": ("log.append-only",),
    "appending_refusal": ("refusal.append-nothing",),
    "untyped_refusal": ("refusal.typed-reason",),
    "open_namespace": ("resume.kernel-namespace",),
    "early_answer": ("resume.not-suspended",),
    "any_gate": ("resume.gate-mismatch",),
    "bare_resume": ("resume.accepted-records-answer",),
    "rerun_steps": ("replay.step-runs-once",),
    "stale_state": ("fold.state-is-fold-of-log",),
    "dropped_latest": ("fold.matches-reference",),
    "getattr_handlers": ("fold.key-safety",),
    "raw_input": ("start.input-validated",),
    # ADR 0104
    "recovery_resumes": ("recovery.records-no-answer", "answer.one-suspend-point", "answer.addressed-while-parked"),
    "verdict_as_entry": ("indoubt.verdict-is-a-decision", "answer.one-suspend-point"),
    "human_reparks": ("human.completes-with-answer",),
    "human_replay_keeps_entry": ("answer.addressed-while-parked", "gate.i-receives-entry-i"),
    "open_emit_guard": ("emit.kernel-types-refused",),
    "loose_meter": ("emit.allowed-types-validated",),
    "unscoped_effect_decisions": ("emit.decisions-guarded",),
    "lenient_indoubt_park": ("indoubt.non-verdict-refused",),
    "indoubt_retried": ("indoubt.parks-per-attempt",),
    "effect_twice_on_success": ("indoubt.effect-once-per-attempt",),
    "stale_verdict_reader": ("indoubt.legacy-verdict",),
    "keeps_caller_step_id": ("human.park-carries-step-id",),
    "parallel_last_park": ("parallel.call-order",),
    "parks_in_call_order": ("hazard.mixed-parallel",),
    "resume_as_answers_crash": ("resumeas.recording-table",),
    "recovers_parked": ("recovery.skips-parked",),
    "pre_120_fold": ("fold.null-resume-status-only",),
    # ADR 0077
    "raw_answer": ("typed.parsed-before-append", "typed.sharp-edge"),
    "untyped_answers": ("typed.parsed-before-append",),
    "normalised_answers": ("typed.undeclared-unchanged",),
    "old_flow_schema": ("typed.resume-as-target-schema",),
    "shape_before_identity": ("typed.identity-before-shape",),
    "validating_load": ("typed.rehydration-not-validated",),
    # ADR 0117
    "sorted_dumps_digest": ("approvals.digest-recorded",),
    "digest_not_enforced": ("approvals.digest-echoed",),
    "shallow_views": ("approvals.digest-depth",),
    "park_unbound_signature": ("approvals.signature-bound",),
    "silent_grant": ("approvals.granted-evidence",),
    "fifteen_byte_secret": ("approvals.weak-secret",),
    "binds_the_tip": ("approvals.park-located",),
    "timer_passthrough": ("approvals.timer-normalised",),
    "caller_timer_under_strict": ("approvals.timer-system-only",),
    "late_timers": ("approvals.timer-fires",),
    "strict_without_authenticator": ("approvals.strict-needs-authenticator",),
}
