"""Reports: the report model (report.json) and its writers (junit.xml, summary.md,
the HTML conformance matrix), implementation manifests of known failures, and
the comparison of two reports. Committed reports live in subfolders (reports/reference/...)."""
