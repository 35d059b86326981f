"""Seeded mutants of the reference kernel: each breaks one rule of the ADRs on
purpose, and the suite must report it. `--impl python:mutants.NAME:make`
(with tests/ on the import path) plugs one in like any other kernel."""
