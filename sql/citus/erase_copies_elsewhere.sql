-- erase_copies_elsewhere(documents) (Citus only) -> void
--
-- Single-node counterpart: none needed there -- migration 018's trigger on documents rewrites every
-- stored answer that cites a deleted document, and 024's when a document leaves a collection. On Citus
-- those triggers run on the document's shard and reach only the messages and research runs of the same
-- tenant; a document other users cite lives in another tenant: the shared corpus (every user's answers
-- cite it) and a team collection's documents (its members' answers cite them; they stay in their
-- owners' tenants). This function, run on the coordinator after such a delete or move, erases from every
-- user's stored answers what that user may no longer read of these documents (a deleted one, or one of
-- a collection they are no member of): erase_unreadable_copies() (sql/citus/), per owner of a citing
-- row, on that owner's shard -- sources, confidence parents, report lines and a research run's
-- evidence records (migration 030). A document its reader may still read is kept, so calling it for
-- any id erases nothing one node would keep.
-- Called by backend/db/repositories/documents.py (erase_copies_elsewhere) after deleting a public or
-- collection document and after a document leaves a collection, only where this function exists, i.e.
-- on a distributed database, in a transaction of its own (Citus refuses a definer's access, in one
-- transaction, to shards the user's statement just modified).
-- The documents leave erasure_outbox (sql/citus/erasure_outbox.sql), where the change's transaction
-- queued them.
-- Usage:   select public.erase_copies_elsewhere(array['…']::uuid[]);
set search_path = public, extensions;

-- Before it covered documents that left a collection it returned a count.
drop function if exists public.erase_copies_elsewhere(uuid[]);

create or replace function public.erase_copies_elsewhere(documents uuid[])
returns void
language plpgsql
volatile
security definer
set search_path = public, pg_temp
as $$
begin
    perform public.erase_unreadable_copies(array(select d::text from unnest(documents) as d), null);
    -- done: the change's transaction queued them in case it never came to this (erasure_outbox.sql)
    delete from public.erasure_outbox o where o.document_id = any(documents);
end;
$$;
revoke execute on function public.erase_copies_elsewhere(uuid[]) from public, anon;
grant execute on function public.erase_copies_elsewhere(uuid[]) to authenticated, service_role;
