"""DBOS Transact behind the driver interface: the driver, its glue (the adapter's side, the worker
process, DBOS's records), the reproducer template and the manifest. NOTES.md says how it maps."""
