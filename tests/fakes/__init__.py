"""Deliberately broken implementations: the harness must turn each into a
finding in a complete report, never a traceback or a lost report."""
