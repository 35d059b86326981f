"""The driver protocol: the driver interface as JSON Lines on stdin/stdout
(docs/protocol.md), its messages, the stdio transport and `loomcheck serve`."""
