-- collection_members_erase_copies() (Citus) -> trigger (statement level, after delete on
-- collection_members)
--
-- Single-node counterpart: migration 024 (the documents of the collections the removed members left
-- are erased from those members' stored answers, by erase_unreadable_copies()). On Citus the trigger
-- runs on the coordinator (collection_members is its table), where Citus plans no join of the
-- transition table with the distributed documents: the collections are read first, then their
-- documents. erase_unreadable_copies() (sql/citus/) decides per member on the coordinator.
set search_path = public, extensions;

create or replace function public.collection_members_erase_copies()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    left_collections uuid[];
    leavers uuid[];
    documents_left text[];
begin
    -- Each a statement of its own: Citus plans a statement that names a distributed table without the
    -- trigger's transition table in reach.
    left_collections := array(select distinct g.collection_id from gone_members g);
    leavers := array(select distinct g.user_id from gone_members g);
    documents_left := array(select d.id::text from public.documents d where d.collection_id = any(left_collections));
    perform public.erase_unreadable_copies(documents_left, leavers);
    return null;
end;
$$;
revoke execute on function public.collection_members_erase_copies() from public, anon, authenticated, service_role;
