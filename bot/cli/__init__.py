"""The `maka` command."""
