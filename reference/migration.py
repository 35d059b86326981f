"""Code versions and state migration (K11, ADR 0056): an execution runs only on the code it is
pinned to, and a resumeAs moves it, perhaps with a transformState whose outcome is recorded.
A part of the Runtime; docs/runtime.md."""

from __future__ import annotations

from loomcheck.reference.errors import FlowCodeMismatchError, InputValidationError, StateMigrationError
from loomcheck.reference.events import JSON
from loomcheck.reference.fold import State
from loomcheck.reference.transforms import apply_transform
from loomcheck.spec.parsing import Invalid
from loomcheck.spec.programs import FlowProgram


class StateMigration:
    """The code check and the migration of a resumeAs."""

    flows: dict[str, FlowProgram]
    versions: dict[str, str | None]

    def migrate_state(self, state: State, target_flow: str, transform: JSON) -> JSON:
        """ADR 0056 D1, D3: the transform's outcome on the FOLDED _input (an earlier
        migration may have replaced it), then the target's input contract on what the
        target will run with. Either refuses with StateMigrationError before any append."""
        program = self.flows[target_flow]
        current = state.variables.get("_input")  # ADR 0056 D1: the FOLDED _input
        # ADR 0056 D3: a transform that raises or returns nothing refuses before any append.
        outcome = current if transform is None else apply_transform(transform, current, program.inputSchema)
        if transform is not None:  # what is recorded as migratedInput: bounded like any input (a wrap nests it)
            outcome = self.ingress(outcome, "the migrated input", InputValidationError, "invalid-input",
                                   "input-too-large")
        parsed = self.input_contract(program, outcome)
        if isinstance(parsed, Invalid):  # ADR 0056 Consequences: the target's input contract holds or refuses
            raise StateMigrationError("input-contract", f"the target flow {target_flow!r} does not accept the "
                                      f"input it would run with (field {parsed.field}: {parsed.message}); "
                                      f"a transformState can migrate it")
        return outcome

    def migration_record(self, state: State, target_flow: str, transform: JSON, migrated: JSON) -> dict[str, JSON]:
        """EXECUTION_MIGRATED: without a transform exactly as before 1.15.0 (ADR 0056 D3)."""
        record: dict[str, JSON] = {"fromFlow": state.flow_id, "toFlow": target_flow}
        if state.version is not None:
            record["fromVersion"] = state.version
        if self.versions.get(target_flow) is not None:
            record["toVersion"] = self.versions[target_flow]
        if transform is not None:  # ADR 0056 D3: without a transform, exactly as before 1.15.0
            record["migratedInput"] = migrated  # ADR 0056 D1: the outcome is durable, the function never is
        return record

    def check_code(self, state: State) -> None:
        """K11: an execution runs only on the code it is pinned to; resumeAs is the exit."""
        registered = self.versions.get(state.flow_id or "")  # ADR 0056 Context: K11's pinning
        if state.version is not None and registered is not None and state.version != registered:
            raise FlowCodeMismatchError("code-mismatch", f"the execution is pinned to {state.version} of flow "
                                        f"{state.flow_id!r}, but {registered} is registered; resumeAs onto it "
                                        f"(with a transformState if its input contract changed)")
