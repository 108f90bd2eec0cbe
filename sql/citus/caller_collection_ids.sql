-- caller_collection_ids(min_role) (Citus) -> uuid[]
--
-- Single-node counterpart: migration 024 (the collections auth.uid() holds at least min_role in, read
-- from collection_members). On Citus, collections and collection_members stay tables of the
-- coordinator (their triggers write each other, which a trigger on a shard could not), but the
-- policies of documents and chunks call this function on the workers, where those tables do not
-- exist and a shard may not query another node. So it answers from where it runs:
--   on the coordinator (collection_members exists): the table, as on one node, fresh per statement;
--   on a worker: the request's grants, which apply_collection_grants() computed on the coordinator
--                from collection_members and sent as SET LOCAL pgrag.collections_<role> (the form
--                Citus propagates, like request.jwt.claims). backend/db/identity.py calls it when a
--                user's transaction starts; a write to collection_members re-applies it
--                (collection_members_reapply_grants), so the writer's own transaction sees its change.
--                Without the setting: a member of none.
-- plpgsql, not SQL: the table branch is planned only when it runs (on the coordinator); a SQL body
-- naming collection_members could not even be planned on a worker.
-- Usage:   select public.caller_collection_ids('editor');
set search_path = public, extensions;

create or replace function public.caller_collection_ids(min_role text default 'viewer')
returns uuid[]
language plpgsql
stable
security definer
set search_path = public, pg_temp
as $$
declare
    level integer := case min_role when 'admin' then 3 when 'editor' then 2 else 1 end;
begin
    if to_regclass('public.collection_members') is null then
        return coalesce(nullif(current_setting(
            'pgrag.collections_' || case level when 3 then 'admin' when 2 then 'editor' else 'viewer' end,
            true), ''), '{}')::uuid[];
    end if;
    return (select coalesce(array_agg(m.collection_id order by m.collection_id), '{}')
            from public.collection_members m
            where m.user_id = auth.uid()
              and case m.role when 'admin' then 3 when 'editor' then 2 else 1 end >= level);
end;
$$;
revoke execute on function public.caller_collection_ids(text) from public, anon;
grant execute on function public.caller_collection_ids(text) to authenticated, service_role;
