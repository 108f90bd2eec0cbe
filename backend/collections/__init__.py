"""Team collections: documents shared with members by role (issue 27, migration 024)."""
