"""Names the spec fixes, as plain constants (no pydantic: pure code imports them)."""

IN_DOUBT_GATE = "EffectInDoubtResolved"   # ADR 0104: the park of an in-doubt non-idempotent step
HUMAN_GATE = "HumanInput"                 # the default gate name of a human step in flow programs
OBSERVED_EVENT = "loomcheck.observed"      # what the flow-program language's observe emits
INDOUBT_DECISION_PREFIX = "__loom_indoubt__"
