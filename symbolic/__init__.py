"""The symbolic layer (issue 9): the z3 and CrossHair checks. They prove, over
every input rather than a sample, what the spec's rules accept (for example
guards.py: the ADR 0104 D1 emit guard's meter and quota rules over all 64-bit
floats and all integers), and derive the boundary witnesses the other layers
replay against an implementation through the driver. Every solver or CrossHair
call is bounded in time and reports "unknown", never "proved", when it runs out."""
