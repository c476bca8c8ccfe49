"""The owner's and operator's status page: `/status` (HTML) and `/status.json`."""
