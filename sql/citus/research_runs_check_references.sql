-- research_runs_check_references() (Citus) -> trigger
--
-- Single-node counterpart: migration 018 (a run's conversation and message must be its owner's and
-- readable by the writer). Both are looked up by (tenant_id, id): the co-located shards on this node.
set search_path = public, extensions;

create or replace function public.research_runs_check_references()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    everything boolean := public.caller_visibility_scopes() is null;
begin
    if new.conversation_id is not null
       and (tg_op = 'INSERT' or new.conversation_id is distinct from old.conversation_id
            or new.owner_id is distinct from old.owner_id)
       and not exists (
           select 1 from public.conversations c
           where c.tenant_id = new.tenant_id and c.id = new.conversation_id
             and c.owner_id is not distinct from new.owner_id
             and (everything or c.owner_id = auth.uid())) then
        raise exception 'conversation % does not exist', new.conversation_id
            using errcode = 'foreign_key_violation';
    end if;
    if new.message_id is not null
       and (tg_op = 'INSERT' or new.message_id is distinct from old.message_id
            or new.owner_id is distinct from old.owner_id)
       and not exists (
           select 1 from public.messages m
           where m.tenant_id = new.tenant_id and m.id = new.message_id
             and m.owner_id is not distinct from new.owner_id
             and (everything or m.owner_id = auth.uid())) then
        raise exception 'message % does not exist', new.message_id
            using errcode = 'foreign_key_violation';
    end if;
    return new;
end;
$$;
revoke execute on function public.research_runs_check_references() from public, anon, authenticated, service_role;
