-- 026: background ingestion jobs (issue 29, item 3). POST /documents/upload?background=true (and
-- /documents/batch) store the request's files here and answer 202 with the job's id; a worker (a thread
-- of the API process, or `python -m backend worker`, several at once) ingests them file by file as the
-- job's owner, and GET /ingest/jobs/{id} (and its SSE stream) reads the progress.
--
-- * A job remembers who asked: owner_id, the database role and the verified claims of the request that
--   created it. All three are column defaults taken from the inserting transaction (auth.uid(),
--   current_user, request.jwt.claims) and no API role may write them, so a job can only ever run as the
--   identity that created it: the worker sets exactly that role and those claims, and RLS decides what
--   the ingest may write, as it did for the request.
-- * A file's bytes (or, for /documents/batch, the documents as JSON) stay in `body` until the file
--   ends (done, failed or cancelled), then are dropped. Their size is bounded by the upload limits
--   (MAX_REQUEST_BYTES).
-- * Workers claim queued files with FOR UPDATE SKIP LOCKED, as the backend's own role (the queue spans
--   every user), and hold a lease (lease_until) that a heartbeat renews; a file whose lease ran out (its
--   worker died) is claimed again, at most INGEST_JOB_MAX_ATTEMPTS times. Ingesting a file is one
--   transaction and idempotent by content hash, so a retried file is stored once.
-- * Users read their own jobs and files and may cancel their own queued files (status only); the
--   service role sees every job, as for the other tables.

set search_path = public, extensions;

create table if not exists public.ingest_jobs (
    id uuid primary key default gen_random_uuid(),
    owner_id uuid default auth.uid(),
    run_as text not null default current_user,
    claims jsonb not null default coalesce(nullif(current_setting('request.jwt.claims', true), ''), '{}')::jsonb,
    kind text not null,
    -- The team collection the files go into (migration 024), checked when the job is submitted and again
    -- when each file is ingested (a role lost in between fails the file with its reason); no foreign
    -- key: a collection deleted meanwhile fails the file the same way instead of removing the job.
    collection_id uuid,
    created_at timestamptz not null default now(),
    constraint ingest_jobs_kind_check check (kind in ('upload', 'batch')),
    constraint ingest_jobs_run_as_check check (run_as in ('authenticated', 'service_role')),
    constraint ingest_jobs_user_has_owner check (run_as <> 'authenticated' or owner_id is not null)
);
alter table public.ingest_jobs enable row level security;

comment on table public.ingest_jobs is
    'Background ingestion jobs: who asked (owner_id, run_as role, claims: the identity the worker runs '
    'each file as). Readable by their owner only.';

create index if not exists ingest_jobs_owner_id_idx on public.ingest_jobs (owner_id, created_at desc);

create table if not exists public.ingest_job_files (
    id uuid primary key default gen_random_uuid(),
    job_id uuid not null references public.ingest_jobs (id) on delete cascade,
    owner_id uuid default auth.uid(),
    position integer not null,
    filename text not null,
    content_type text,
    body bytea,
    status text not null default 'queued',
    error text,
    chunks_total integer,
    chunks_done integer not null default 0,
    outcome jsonb,
    attempts integer not null default 0,
    worker text,
    lease_until timestamptz,
    created_at timestamptz not null default now(),
    started_at timestamptz,
    finished_at timestamptz,
    constraint ingest_job_files_status_check
        check (status in ('queued', 'running', 'done', 'failed', 'cancelled')),
    constraint ingest_job_files_position_key unique (job_id, position),
    constraint ingest_job_files_finished_when_ended
        check ((status in ('done', 'failed', 'cancelled')) = (finished_at is not null))
);
alter table public.ingest_job_files enable row level security;

comment on table public.ingest_job_files is
    'The files of an ingestion job, each with its status, progress (chunks_done of chunks_total), '
    'outcome or error, and the worker lease. body holds the uploaded bytes until the file ends.';

create index if not exists ingest_job_files_job_id_idx on public.ingest_job_files (job_id, position);
-- What workers claim: queued files, oldest first, and running ones whose lease may have run out.
create index if not exists ingest_job_files_claimable_idx on public.ingest_job_files (created_at)
    where status in ('queued', 'running');

drop policy if exists "Users can read and create their own ingest jobs" on public.ingest_jobs;
create policy "Users can read and create their own ingest jobs" on public.ingest_jobs
    for all to authenticated
    using (owner_id = (select auth.uid()))
    with check (owner_id = (select auth.uid()));
drop policy if exists "The service role can manage every ingest job" on public.ingest_jobs;
create policy "The service role can manage every ingest job" on public.ingest_jobs
    for all to service_role using (true) with check (true);

-- A file joins only a job its writer can see, i.e. one of their own.
drop policy if exists "Users can manage the files of their own ingest jobs" on public.ingest_job_files;
create policy "Users can manage the files of their own ingest jobs" on public.ingest_job_files
    for all to authenticated
    using (owner_id = (select auth.uid()))
    with check (
        owner_id = (select auth.uid())
        and exists (select 1 from public.ingest_jobs j where j.id = job_id)
    );
drop policy if exists "The service role can manage every ingest job file" on public.ingest_job_files;
create policy "The service role can manage every ingest job file" on public.ingest_job_files
    for all to service_role using (true) with check (true);

-- Supabase's default privileges give anon and authenticated ALL on new tables: start from nothing.
-- owner_id, run_as and claims are never granted for writing: they come from the inserting transaction.
revoke all on table public.ingest_jobs, public.ingest_job_files from anon, authenticated, service_role;
grant select (id, owner_id, kind, collection_id, created_at) on table public.ingest_jobs
    to authenticated, service_role;
grant insert (id, kind, collection_id) on table public.ingest_jobs to authenticated, service_role;
grant select on table public.ingest_job_files to authenticated, service_role;
grant insert (id, job_id, position, filename, content_type, body) on table public.ingest_job_files
    to authenticated, service_role;
-- Cancelling a queued file is the only change a user makes: its status, its end, its dropped body.
grant update (status, finished_at, body) on table public.ingest_job_files to authenticated, service_role;
