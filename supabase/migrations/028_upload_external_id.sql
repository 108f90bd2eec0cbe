-- 028: a file of a background upload may name the document it is a new version of (its external_id),
-- so re-ingesting a changed file updates that document in place (same id; stored answers citing it
-- show "changed since", not "deleted") instead of adding a second document under the new content's
-- hash. The API checks the name before queuing (one file, one document); the worker applies it.
alter table public.ingest_job_files add column if not exists external_id text;
grant insert (external_id) on table public.ingest_job_files to authenticated, service_role;
