"""pgrag on a Citus cluster against one node: retrieval quality (__main__) on the same data."""
