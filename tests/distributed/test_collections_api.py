"""tests/test_collections_api.py, unchanged, against the cluster: team collections over HTTP (A owns a
collection, B views, C edits, D is no member). The collection's documents stay in their owners'
tenants; a member's search adds those tenants, and the shards' policies read the member's grants
(sql/citus/caller_collection_ids.sql)."""

from tests.test_collections_api import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
