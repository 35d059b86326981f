"""LlamaIndex Workflows behind the driver interface: the driver, its glue, the reproducer template
and the manifest. NOTES.md says how it maps."""
