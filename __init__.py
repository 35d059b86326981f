"""loomcheck: a conformance and model-checking suite for durable-execution kernels
with the semantics of Loom's decision records, and a minimal reference kernel.

Folders, top down:
    spec/        the catalogue as data (invariants, events, refusals, schemas, regressions)
    reference/   the reference kernel (events, stores, fold, flow context, runtime)
    harness/     the driver interface, implementation loading, scripts and runs
    properties/  invariant predicates and the Hypothesis state machine
    fuzz/        hostile-input corpora
    reports/     report writers (table, report.json, junit.xml)
"""

__version__ = "0.1.0"
