"""The fleet: logs written the way a mixed-version deployment writes them.

ADR 0104 D2 ("Rolling deploys") says old-kernel nodes keep writing entries that
answered no suspend point until every node runs the new kernel, and that the
reverse direction (an old node reading a new node's null resume) is worse.
This package builds such logs and the verdict spec/legacy-logs.md gives each,
so any kernel can be checked against them:

    writers.py   Runtimes that record as EVENT_SCHEMA 1.15.0, 1.19.0 and 1.20.0 did,
                 sharing one store (a rolling deploy)
    generate.py  the seeded corpus: generated, hand-written and downgrade-hazard cases
    corpus.py    the corpus format (pydantic), its JSON Schema, dump/load
    replay.py    replay one case against a driver and list what differs
"""
