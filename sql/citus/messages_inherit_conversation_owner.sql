-- messages_inherit_conversation_owner() (Citus) -> trigger
--
-- Single-node counterpart: migration 013. A message copies its conversation's owner, looked up by
-- (tenant_id, id) on the co-located shard of conversations.
set search_path = public, extensions;

create or replace function public.messages_inherit_conversation_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    conversation record;
begin
    select c.owner_id into conversation from public.conversations c
    where c.tenant_id = new.tenant_id and c.id = new.conversation_id;
    if found then
        new.owner_id := conversation.owner_id;
    end if;
    return new;
end;
$$;
revoke execute on function public.messages_inherit_conversation_owner() from public, anon, authenticated, service_role;
