"""Named memory indexes kept by indexing agents (issue 14): the service that creates and
shows them, the maintenance worker that keeps them, and the agent turn that organizes."""
