"""The fault tier (issue 31) on the e2e node: the chart as installed (two gateway replicas, the bundled Redis, one
operator), its pods killed and deleted the way a node drain, an OOM kill or a crash does, and the kubelet restarted,
while sessions and tasks run; every execution and task must end exactly once, with the right outcome or a clear
reason, no tool may get a call twice or a value meant for another record, and nothing may be left behind.

`make test` runs a CI-sized part; `MCPEXEC_FAULTS=full` (`make faults`) the whole tier: longer outages, more faults,
bigger bursts. Every test of this package shares one node and one release (conftest.py). Each scenario prints its
figures (and appends them to MCPEXEC_FAULTS_FIGURES, see figures.py); docs/reliability.md keeps the last run's.
"""
