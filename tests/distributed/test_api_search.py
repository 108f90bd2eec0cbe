"""tests/test_api_search.py, unchanged, against the cluster.

POST /search: the three stages, their diagnostics, dynamic top-k edges and 4xx errors.
"""

from tests.test_api_search import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
