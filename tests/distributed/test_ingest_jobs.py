"""tests/test_ingest_jobs.py, unchanged, against the cluster: the job queue (ingest_jobs,
ingest_job_files) stays on the coordinator, where a worker claims files of every tenant with FOR UPDATE
SKIP LOCKED, and writes each file's documents as its owner, to the owner's shard."""

from tests.test_ingest_jobs import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)
