"""pgrag: a Postgres-native RAG backend."""

from pathlib import Path

__version__ = "0.1.0"

# Repository root (the folder holding supabase/, sql/ and backend/).
PROJECT_ROOT = Path(__file__).resolve().parent.parent
