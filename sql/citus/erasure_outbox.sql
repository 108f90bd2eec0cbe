-- erasure_outbox (Citus only): queue_erasure(documents) -> void, drain_erasures() -> integer
--
-- Single-node counterpart: none needed there -- the triggers of migrations 018 / 024 erase the copies
-- of a deleted or moved document in the change's own transaction. On Citus the copies other users
-- hold are erased by erase_copies_elsewhere() in a second transaction, after the change's (Citus
-- refuses, in one transaction, a definer's access to shards the user's statement just modified). A
-- crash between the two would leave the copies. So the change's transaction also queues the documents
-- here (queue_erasure(), a table of the coordinator, committed with the change or not at all);
-- erase_copies_elsewhere() takes them out once done, and drain_erasures() finishes whatever a crash
-- left: the application calls it at start-up and before every erasure.
-- The one table this folder creates outside distribute.sql, so that a cluster distributed before it
-- gets it from the next `db distribute` (every file but the layout is re-applied on every run).
-- Called by backend/db/repositories/documents.py (queue_erasure, drain_erasures), only where these
-- functions exist, i.e. on a distributed database.
-- Usage:   select public.drain_erasures();   -- documents whose erasure a crash interrupted, finished
set search_path = public, extensions;

create table if not exists public.erasure_outbox (
    document_id uuid primary key,
    queued_at timestamptz not null default now()
);
-- No policy: no API role reads or writes it but through the functions below.
alter table public.erasure_outbox enable row level security;
revoke all on public.erasure_outbox from public, anon, authenticated, service_role;

create or replace function public.queue_erasure(documents uuid[])
returns void
language sql
volatile
security definer
set search_path = public, pg_temp
as $$
    -- Only ids: erasing a document's copies is decided per reader on their shard (a document its
    -- reader may still read is kept), so queueing any id erases nothing one node would keep.
    insert into public.erasure_outbox (document_id)
    select distinct d from unnest(documents) as d where d is not null
    on conflict (document_id) do nothing;
$$;
revoke execute on function public.queue_erasure(uuid[]) from public, anon;
grant execute on function public.queue_erasure(uuid[]) to authenticated, service_role;

create or replace function public.drain_erasures()
returns integer
language plpgsql
volatile
security definer
set search_path = public, pg_temp
as $$
declare
    queued uuid[];
begin
    -- Rows another transaction is draining are skipped, not waited for.
    select coalesce(array_agg(o.document_id), '{}') into queued
    from (select document_id from public.erasure_outbox for update skip locked) o;
    if cardinality(queued) > 0 then
        perform public.erase_copies_elsewhere(queued);
    end if;
    return cardinality(queued);
end;
$$;
revoke execute on function public.drain_erasures() from public, anon;
grant execute on function public.drain_erasures() to authenticated, service_role;
