"""Tools as a task sees them: the catalog (progressive disclosure), calls, policy, wrapper source."""
