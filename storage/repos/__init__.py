"""Repositories: the only code that writes SQL. Each function takes the caller's session, so
a service composes several of them into one transaction."""
