"""Repositories: the only code that writes SQL. Each function takes the caller's database
session, `tx` (the name a database session has everywhere), so a service composes several of
them into one transaction."""
