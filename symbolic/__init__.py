"""The symbolic checks: z3 proofs over every input rather than a sample (the emit guard's
meter and quota rules, the gate model's induction) and CrossHair behaviour-difference
searches on the kernel's pure functions, with the boundary witnesses the other layers
replay through the driver. Every solver or CrossHair call is bounded and reports
"unknown", never "proved", when it runs out (docs/model-checking.md#symbolic-checks)."""
