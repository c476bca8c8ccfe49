"""HTTP surface: health, readiness, metrics, and the routes channels add."""
