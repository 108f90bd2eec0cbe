-- messages_inherit_conversation_owner() (Citus) -> trigger
--
-- Single-node counterpart: migration 018 (013's copy of the conversation's owner, and 018's check
-- that the writer may read the conversation). The conversation is looked up by (tenant_id, id) on the
-- co-located shard of conversations; one of another tenant is not found, the error of a missing one.
set search_path = public, extensions;

create or replace function public.messages_inherit_conversation_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    conversation record;
begin
    select c.owner_id into conversation from public.conversations c
    where c.tenant_id = new.tenant_id and c.id = new.conversation_id;
    if new.conversation_id is not null
       and (tg_op = 'INSERT' or new.conversation_id is distinct from old.conversation_id)
       and (not found
            or not (conversation.owner_id = auth.uid() or public.caller_visibility_scopes() is null)) then
        raise exception 'conversation % does not exist', new.conversation_id
            using errcode = 'foreign_key_violation';
    end if;
    if found then
        new.owner_id := conversation.owner_id;
    end if;
    return new;
end;
$$;
revoke execute on function public.messages_inherit_conversation_owner() from public, anon, authenticated, service_role;
