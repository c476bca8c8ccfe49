"""The Runtime Host: plain code that runs workers, timers and leases. No model in here."""
