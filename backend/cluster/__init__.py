"""A local Citus cluster from the embedded PostgreSQL: Citus built from source, nodes (docs/scaling.md)."""
