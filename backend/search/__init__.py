"""Search: one question against the chunks a caller may read (and the web leg beside it)."""
