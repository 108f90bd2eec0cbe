"""All SQL outside sql/ lives here: one module per table group, functions taking a connection."""
