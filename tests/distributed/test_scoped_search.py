"""tests/test_scoped_search.py, unchanged, against the cluster.

The filter grammar inside hybrid_search / match_documents, and the plan chosen by selectivity.
"""

from tests.test_scoped_search import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
