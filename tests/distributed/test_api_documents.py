"""tests/test_api_documents.py, unchanged, against the cluster.

Documents over HTTP: ingest, upload, list, read, delete, and clear 4xx errors.
"""

from tests.test_api_documents import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
