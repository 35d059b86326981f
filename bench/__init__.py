"""loomcheck's benchmarks: `python -m loomcheck.bench`. Every figure is a ratio of two
things measured side by side in one run, printed next to its target; absolute times are
shown but never judged (docs/bench.md)."""
