"""A handler module that cannot be imported: its pods crash-loop."""

raise RuntimeError("broken handler module")
