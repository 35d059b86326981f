"""Names the spec fixes, as plain constants (no pydantic: pure code imports them)."""

IN_DOUBT_GATE = "EffectInDoubtResolved"   # ADR 0104: the park of an in-doubt non-idempotent step
HUMAN_GATE = "HumanInput"                 # the default gate name of a human step in flow programs
OBSERVED_EVENT = "loomcheck.observed"      # what the flow-program language's observe emits
INDOUBT_DECISION_PREFIX = "__loom_indoubt__"
TIMER_FIRED = "TIMER_FIRED"               # ADR 0117 D5: the kernel's own wake of a timed park
APPROVAL_GRANTED = "APPROVAL_GRANTED"     # ADR 0117 D2: who approved, recorded before the answer
CLOCK_START_MS = 1_800_000_000_000        # a driver's clock after reset (ms since the epoch); only advance_clock moves it
INPUT_EVENT = "loomcheck.input"            # what the flow-program language's input op emits: the input this run was handed
STATE_MIGRATION_ERROR = "StateMigrationError"  # ADR 0056 D3: a transform that fails refuses the migration
DISCARD_DECISION_PREFIX = "__loom_discard__"  # ADR 0104 D2: the operator override's decision, __loom_discard__:<stepId>
WARN_MEMORY = 4096                         # ADR 0104 D2: what a runtime remembers having warned about (FIFO)
