"""Report writers: the report model (report.json), junit.xml, and the terminal
table. Committed reports live in subfolders (reports/reference/...)."""
