-- conversations_propagate_owner() (Citus) -> trigger
--
-- Single-node counterpart: migration 013. On Citus an owner cannot move (the tenant, the distribution
-- key, follows the owner and a row never changes shard: conversations_tenant_is_owner refuses it), so
-- this only ever repeats the owner the messages already have; kept so the trigger stays valid.
set search_path = public, extensions;

create or replace function public.conversations_propagate_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
begin
    update public.messages m set owner_id = new.owner_id
    where m.tenant_id = new.tenant_id and m.conversation_id = new.id;
    return null;
end;
$$;
revoke execute on function public.conversations_propagate_owner() from public, anon, authenticated, service_role;
