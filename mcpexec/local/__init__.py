"""`mcpexec run` on a laptop: the CLI, the run, the servers file, the local sandboxes."""
