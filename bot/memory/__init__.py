"""Memory: what the assistant can search and recall (session logs now; synced sources and
named indexes later)."""
