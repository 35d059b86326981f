"""Reports: the report model (report.json) and its writers (junit.xml, summary.md, the HTML
conformance matrix), the comparison of two reports, the catalogue document, the per-invariant
index and the JSON Schemas. Only writers live here: the committed runs and the outputs derived
from them are in the repository's results/ and docs/ folders (`python -m loomcheck.reports.regenerate`)."""
