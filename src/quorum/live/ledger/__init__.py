"""The durable ledger: one SQLite file per project, its schema and its cells.

Modules:

- ``schema``: The ledger's tables: the schema, its migrations, and a read-only connection.
- ``store``: The durable ledger: one SQLite file (WAL) per project.
"""
