-- apply_collection_grants() (Citus only) -> void
--
-- Sends the calling user's collection memberships to the workers for this transaction: SET LOCAL
-- pgrag.collections_viewer / _editor / _admin = the collections auth.uid() holds at least that role
-- in (collection_members, on the coordinator). The policies of documents and chunks read them on the
-- shards through caller_collection_ids() (sql/citus/caller_collection_ids.sql). SET LOCAL, because it
-- is the form Citus propagates (citus.propagate_set_commands = local): set_config() would stay here.
-- Called by backend/db/identity.py at the start of a user's transaction (only where this function
-- exists, i.e. on a distributed database), and by the trigger collection_members_reapply_grants after
-- every write to collection_members. The values are uuids from the table, never the caller's input.
-- Usage:   select public.apply_collection_grants();
set search_path = public, extensions;

create or replace function public.apply_collection_grants()
returns void
language plpgsql
volatile
security definer
set search_path = public, pg_temp
as $$
declare
    held record;
begin
    select coalesce(array_agg(m.collection_id order by m.collection_id), '{}') as viewer,
           coalesce(array_agg(m.collection_id order by m.collection_id)
                    filter (where m.role in ('editor', 'admin')), '{}') as editor,
           coalesce(array_agg(m.collection_id order by m.collection_id) filter (where m.role = 'admin'), '{}')
               as admin
    into held
    from public.collection_members m
    where m.user_id = auth.uid();
    execute format('set local pgrag.collections_viewer = %L', held.viewer::text);
    execute format('set local pgrag.collections_editor = %L', held.editor::text);
    execute format('set local pgrag.collections_admin = %L', held.admin::text);
end;
$$;
revoke execute on function public.apply_collection_grants() from public, anon;
grant execute on function public.apply_collection_grants() to authenticated, service_role;

-- After a membership changes (a collection created: its owner's row; a member added, promoted,
-- removed), the writer's transaction re-sends its own grants, so the shards see what it just did.
create or replace function public.collection_members_reapply_grants()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
begin
    if auth.uid() is not null then
        perform public.apply_collection_grants();
    end if;
    return null;
end;
$$;
revoke execute on function public.collection_members_reapply_grants() from public, anon, authenticated, service_role;

drop trigger if exists collection_members_reapply_grants on public.collection_members;
create trigger collection_members_reapply_grants
    after insert or update or delete on public.collection_members
    for each statement execute function public.collection_members_reapply_grants();
