"""loomcheck's benchmarks (issue 10): `python -m loomcheck.bench`.

Every figure is a ratio of two things measured side by side in one run, printed
next to its target: these machines are shared and noisy, so absolute times are
shown for reading but never judged. Speed targets live here, never in timed unit
tests.
"""
