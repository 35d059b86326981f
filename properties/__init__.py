"""Invariant predicates keyed by invariant id, and the Hypothesis state machine
that drives any implementation through the driver interface. Nothing here
imports the reference kernel's internals except `fold.matches-reference`,
whose point is to compare with the reference."""
