"""WorkHub: routing a request to the right ongoing task Session among the 32 most recent."""
