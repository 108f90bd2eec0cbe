"""tests/test_sql_functions.py, unchanged, against the cluster.

hybrid_search and match_documents against the real database, with exact tiny vectors.
"""

from tests.test_sql_functions import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
