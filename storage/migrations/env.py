"""Alembic environment. Migrations always run on a connection handed in by
storage.migrate, so the same code path serves `maka migrate`, `maka serve` and the tests."""

from alembic import context

from storage.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `maka migrate` (storage.migrate.migrate)")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
