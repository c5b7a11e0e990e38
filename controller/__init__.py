"""The mcpexec operator: turns AgentTasks into hardened, gVisor-sandboxed Jobs and reports back."""
