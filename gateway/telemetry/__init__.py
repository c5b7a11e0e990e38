"""Metrics, the audit trail and the process's JSON logs."""
