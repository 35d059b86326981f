"""Bounded exhaustive exploration: the explorer over any implementation, and the abstract model of the gate-answer discipline."""
