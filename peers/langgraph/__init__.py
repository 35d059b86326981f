"""LangGraph (the functional API on a SQLite checkpointer) behind the driver interface: the driver,
its glue, the reproducer template and the manifests (guarded, raw). NOTES.md says how it maps."""
