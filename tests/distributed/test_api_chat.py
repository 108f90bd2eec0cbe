"""tests/test_api_chat.py, unchanged, against the cluster.

POST /chat and the conversation history: citations, persistence, follow-ups, SSE, staleness.
"""

from tests.test_api_chat import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
