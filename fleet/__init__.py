"""The fleet: logs written the way a mixed-version deployment writes them (ADR 0104 D2,
"Rolling deploys"), each with the verdict spec/legacy-logs.md gives it, so any kernel can
be checked against them (docs/fleet.md)."""
