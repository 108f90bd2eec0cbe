"""A local Citus cluster from the embedded PostgreSQL: build Citus from source, run nodes (docs/scaling.md)."""
