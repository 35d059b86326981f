"""Prefect behind the driver interface: the driver, its glue (a private server, the flow runs), the
reproducer template and the manifests (guarded, raw). NOTES.md says how it maps."""
