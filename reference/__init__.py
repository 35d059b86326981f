"""The minimal reference kernel: events, stores, the fold, the flow context and
interpreter, the runtime, and its driver. Read in that order."""
