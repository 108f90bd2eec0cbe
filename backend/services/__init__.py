"""Services: the thin layer between the API/CLI and the repositories, providers and SQL functions."""
