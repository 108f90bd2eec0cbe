-- collections_release_documents() (Citus only) -> trigger, and its trigger on collections
--
-- Single-node counterpart: documents.collection_id's foreign key ON DELETE SET NULL (migration 024):
-- deleting a collection leaves its documents to their owners. On Citus documents is distributed and
-- collections a table of the coordinator, and Citus refuses a foreign key from the one to the other,
-- so this trigger, on the coordinator, clears the collection from its documents on every shard they
-- are on (their owners' tenants); documents_propagate_access then clears it from the chunks and the
-- term statistics move to the owners' scopes, on each shard, as on one node; and the former members'
-- stored answers lose what they may no longer read (erase_unreadable_copies(), as 024's
-- documents_moved_erase_copies does on one node). SECURITY DEFINER like the
-- foreign key action it replaces: the policies do not stand between a collection and its documents.
-- A trigger on a coordinator table may run a distributed statement (a trigger on a shard may not).
set search_path = public, extensions;

create or replace function public.collections_release_documents()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    released text[] := array(select d.id::text from public.documents d where d.collection_id = old.id);
begin
    update public.documents d set collection_id = null where d.collection_id = old.id;
    -- as documents_moved_erase_copies does on one node: the former members' stored answers lose them
    perform public.erase_unreadable_copies(released, null);
    return null;
end;
$$;
revoke execute on function public.collections_release_documents() from public, anon, authenticated, service_role;

drop trigger if exists collections_release_documents on public.collections;
create trigger collections_release_documents
    after delete on public.collections
    for each row execute function public.collections_release_documents();
