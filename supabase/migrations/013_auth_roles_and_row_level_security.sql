-- 013: users and tenants. Row-level security decides what every statement of a request can see.
--
-- After this migration:
--   * Requests run as `authenticated` (a signed-in user, or AUTH_MODE=none's local user) or
--     `service_role` (the admin path), with the verified claims in request.jwt.claims for that
--     transaction only (backend/db/identity.py) -- exactly what PostgREST does on Supabase, so the
--     policies below hold for the API and for any Supabase client alike. `anon` sees nothing.
--   * documents.visibility: 'private' (its owner only) or 'public' (the shared corpus, written only
--     by service_role or by the backend's own role, i.e. the CLI). Documents that existed before
--     had no owner -- the CLI and the demo loaded them -- so they become public. A new document
--     that does not say is private when it has an owner and public when it has none.
--   * chunks carry their document's owner_id and visibility, copied by triggers, so chunk policies
--     need no join (and hybrid_search filters chunks without touching documents).
--   * conversations and messages belong to one user; messages carry their conversation's owner_id
--     (copied by a trigger). Conversations that existed before move to the local user of
--     AUTH_MODE=none, 00000000-0000-0000-0000-000000000001, so the demo history survives.
--   * The backend's own role owns the tables and so still bypasses RLS: migrations, the CLI and the
--     bulk loader use it. It is made a member of authenticated and service_role so it can switch.
--   * embedding_cache stays backend-only: a user who could write it could poison the vectors of
--     other users' texts, and reading it would tell whether anyone ingested a given text.
--   * term_stats / corpus_stats are readable by authenticated (hybrid_search computes idf from
--     them); only the triggers on chunks (now SECURITY DEFINER) write them.
-- On Supabase the roles, the auth schema and auth.uid() exist already and are left alone; on plain
-- PostgreSQL (and the embedded server) they are created to behave the same way.

set search_path = public, extensions;

-- --- roles --------------------------------------------------------------------------------------

do $$
begin
    if not exists (select 1 from pg_roles where rolname = 'anon') then
        create role anon nologin noinherit;
    end if;
    if not exists (select 1 from pg_roles where rolname = 'authenticated') then
        create role authenticated nologin noinherit;
    end if;
    if not exists (select 1 from pg_roles where rolname = 'service_role') then
        begin
            create role service_role nologin noinherit bypassrls;
        exception when insufficient_privilege then
            -- Only a superuser (or a BYPASSRLS role) may hand out BYPASSRLS; the service_role
            -- policies below give the same access without it.
            create role service_role nologin noinherit;
        end;
    end if;
end;
$$;

-- The role running the migrations (normally the backend's) must be able to SET ROLE to both.
-- Superusers and Supabase's postgres already can.
do $$
declare
    target text;
    privilege text := case when current_setting('server_version_num')::integer >= 160000 then 'set'
                           else 'member' end;
begin
    foreach target in array array['authenticated', 'service_role'] loop
        if not pg_has_role(current_user, target, privilege) then
            execute format('grant %I to %I', target, current_user);
        end if;
    end loop;
exception when insufficient_privilege then
    raise exception 'role % cannot be made a member of authenticated and service_role', current_user
        using hint = format('As a superuser run: grant authenticated, service_role to %I;', current_user);
end;
$$;

-- --- auth.uid(), auth.role(), auth.jwt(): Supabase's own when present, an equivalent otherwise ------

create schema if not exists auth;

do $$
begin
    if to_regprocedure('auth.uid()') is null then
        create function auth.uid()
        returns uuid
        language sql
        stable
        as $fn$
            select coalesce(
                nullif(current_setting('request.jwt.claim.sub', true), ''),
                (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
            )::uuid
        $fn$;
        comment on function auth.uid() is 'The user id (sub claim) of the request; pgrag migration 013.';
    end if;
    if to_regprocedure('auth.role()') is null then
        create function auth.role()
        returns text
        language sql
        stable
        as $fn$
            select coalesce(
                nullif(current_setting('request.jwt.claim.role', true), ''),
                (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role')
            )::text
        $fn$;
    end if;
    if to_regprocedure('auth.jwt()') is null then
        create function auth.jwt()
        returns jsonb
        language sql
        stable
        as $fn$
            select coalesce(
                nullif(current_setting('request.jwt.claim', true), ''),
                nullif(current_setting('request.jwt.claims', true), '')
            )::jsonb
        $fn$;
    end if;
    if not has_schema_privilege('authenticated', 'auth', 'usage') then
        grant usage on schema auth to anon, authenticated, service_role;
    end if;
end;
$$;

-- --- visibility and owners -------------------------------------------------------------------------

-- Added with default 'public' so existing rows become public without a table rewrite. A new row
-- that does not say follows its owner (trigger below): private when it has one, public when it has
-- none (the service role, the CLI). owner_id defaults to the writing user, so a user's insert is
-- theirs and private. A private document without an owner would be invisible to everyone forever:
-- the constraint refuses it.
alter table public.documents add column if not exists visibility text not null default 'public';
alter table public.documents alter column visibility drop default;
alter table public.documents alter column owner_id set default auth.uid();
alter table public.documents drop constraint if exists documents_visibility_check;
alter table public.documents add constraint documents_visibility_check
    check (visibility in ('private', 'public'));
update public.documents set visibility = 'private' where owner_id is not null and visibility = 'public';
alter table public.documents drop constraint if exists documents_private_has_owner;
alter table public.documents add constraint documents_private_has_owner
    check (visibility = 'public' or owner_id is not null);
comment on column public.documents.visibility is
    'private: readable by owner_id only; public: by every signed-in user, written by service_role only.';

alter table public.chunks add column if not exists visibility text not null default 'public';
alter table public.chunks alter column visibility set default 'private';
alter table public.chunks drop constraint if exists chunks_visibility_check;
alter table public.chunks add constraint chunks_visibility_check check (visibility in ('private', 'public'));
update public.chunks c
set owner_id = d.owner_id, visibility = d.visibility
from public.documents d
where d.id = c.document_id and (c.owner_id is distinct from d.owner_id or c.visibility <> d.visibility);
comment on column public.chunks.visibility is
    'Copied from the document (with owner_id) by triggers, so chunk policies need no join.';

update public.conversations set owner_id = '00000000-0000-0000-0000-000000000001' where owner_id is null;
alter table public.conversations alter column owner_id set default auth.uid();

alter table public.messages add column if not exists owner_id uuid;
update public.messages m
set owner_id = c.owner_id
from public.conversations c
where c.id = m.conversation_id and m.owner_id is distinct from c.owner_id;
comment on column public.messages.owner_id is
    'Copied from the conversation by a trigger, so the message policy needs no join.';

-- --- triggers: a document's default visibility; children inherit access from their parent ---------

create or replace function public.documents_default_visibility()
returns trigger
language plpgsql
set search_path = public, pg_temp
as $$
begin
    if new.visibility is null then
        new.visibility := case when new.owner_id is null then 'public' else 'private' end;
    end if;
    return new;
end;
$$;

drop trigger if exists documents_default_visibility on public.documents;
create trigger documents_default_visibility
    before insert on public.documents
    for each row execute function public.documents_default_visibility();

-- SECURITY DEFINER: the copied values are the parent's real ones whoever writes, and a change of
-- the parent reaches every child row regardless of the writer's own policies.

create or replace function public.chunks_inherit_document_access()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    doc record;
begin
    select d.owner_id, d.visibility into doc from public.documents d where d.id = new.document_id;
    if found then  -- otherwise the foreign key refuses the row with its own message
        new.owner_id := doc.owner_id;
        new.visibility := doc.visibility;
    end if;
    return new;
end;
$$;

drop trigger if exists chunks_inherit_document_access on public.chunks;
create trigger chunks_inherit_document_access
    before insert or update of document_id, owner_id, visibility on public.chunks
    for each row execute function public.chunks_inherit_document_access();

create or replace function public.documents_propagate_access()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    update public.chunks c set owner_id = new.owner_id, visibility = new.visibility
    where c.document_id = new.id;
    return null;
end;
$$;

drop trigger if exists documents_propagate_access on public.documents;
create trigger documents_propagate_access
    after update of owner_id, visibility on public.documents
    for each row
    when (old.owner_id is distinct from new.owner_id or old.visibility is distinct from new.visibility)
    execute function public.documents_propagate_access();

create or replace function public.messages_inherit_conversation_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    conversation record;
begin
    select c.owner_id into conversation from public.conversations c where c.id = new.conversation_id;
    if found then
        new.owner_id := conversation.owner_id;
    end if;
    return new;
end;
$$;

drop trigger if exists messages_inherit_conversation_owner on public.messages;
create trigger messages_inherit_conversation_owner
    before insert or update of conversation_id, owner_id on public.messages
    for each row execute function public.messages_inherit_conversation_owner();

create or replace function public.conversations_propagate_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    update public.messages m set owner_id = new.owner_id where m.conversation_id = new.id;
    return null;
end;
$$;

drop trigger if exists conversations_propagate_owner on public.conversations;
create trigger conversations_propagate_owner
    after update of owner_id on public.conversations
    for each row
    when (old.owner_id is distinct from new.owner_id)
    execute function public.conversations_propagate_owner();

-- Term statistics follow chunk writes of any user; users themselves cannot write them.
alter function public.term_stats_after_insert() security definer;
alter function public.term_stats_after_delete() security definer;

revoke execute on function
    public.documents_default_visibility(), public.chunks_inherit_document_access(), public.documents_propagate_access(),
    public.messages_inherit_conversation_owner(), public.conversations_propagate_owner(),
    public.term_stats_after_insert(), public.term_stats_after_delete(), public.refresh_term_stats()
from public, anon, authenticated, service_role;

-- --- indexes on the columns policies use ----------------------------------------------------------
-- documents_owner_id_idx, chunks_owner_id_idx and conversations_owner_id_idx exist since 001/002.

create index if not exists documents_public_created_at_idx on public.documents (created_at desc)
    where visibility = 'public';
create index if not exists messages_owner_id_idx on public.messages (owner_id);

-- --- policies ----------------------------------------------------------------------------------------
-- (select auth.uid()) is evaluated once per statement, not once per row (Supabase's RLS guide).

drop policy if exists "Users can read public documents and their own" on public.documents;
create policy "Users can read public documents and their own" on public.documents
    for select to authenticated
    using (visibility = 'public' or owner_id = (select auth.uid()));
drop policy if exists "Users can add private documents of their own" on public.documents;
create policy "Users can add private documents of their own" on public.documents
    for insert to authenticated
    with check (visibility = 'private' and owner_id = (select auth.uid()));
drop policy if exists "Users can change their own private documents" on public.documents;
create policy "Users can change their own private documents" on public.documents
    for update to authenticated
    using (visibility = 'private' and owner_id = (select auth.uid()))
    with check (visibility = 'private' and owner_id = (select auth.uid()));
drop policy if exists "Users can delete their own private documents" on public.documents;
create policy "Users can delete their own private documents" on public.documents
    for delete to authenticated
    using (visibility = 'private' and owner_id = (select auth.uid()));
drop policy if exists "The service role can manage every document" on public.documents;
create policy "The service role can manage every document" on public.documents
    for all to service_role using (true) with check (true);

drop policy if exists "Users can read public chunks and their own" on public.chunks;
create policy "Users can read public chunks and their own" on public.chunks
    for select to authenticated
    using (visibility = 'public' or owner_id = (select auth.uid()));
drop policy if exists "Users can add chunks to their own private documents" on public.chunks;
create policy "Users can add chunks to their own private documents" on public.chunks
    for insert to authenticated
    with check (visibility = 'private' and owner_id = (select auth.uid()));
drop policy if exists "Users can change chunks of their own private documents" on public.chunks;
create policy "Users can change chunks of their own private documents" on public.chunks
    for update to authenticated
    using (visibility = 'private' and owner_id = (select auth.uid()))
    with check (visibility = 'private' and owner_id = (select auth.uid()));
drop policy if exists "Users can delete chunks of their own private documents" on public.chunks;
create policy "Users can delete chunks of their own private documents" on public.chunks
    for delete to authenticated
    using (visibility = 'private' and owner_id = (select auth.uid()));
drop policy if exists "The service role can manage every chunk" on public.chunks;
create policy "The service role can manage every chunk" on public.chunks
    for all to service_role using (true) with check (true);

drop policy if exists "Users can manage their own conversations" on public.conversations;
create policy "Users can manage their own conversations" on public.conversations
    for all to authenticated
    using (owner_id = (select auth.uid()))
    with check (owner_id = (select auth.uid()));
drop policy if exists "The service role can manage every conversation" on public.conversations;
create policy "The service role can manage every conversation" on public.conversations
    for all to service_role using (true) with check (true);

drop policy if exists "Users can manage the messages of their own conversations" on public.messages;
create policy "Users can manage the messages of their own conversations" on public.messages
    for all to authenticated
    using (owner_id = (select auth.uid()))
    with check (owner_id = (select auth.uid()));
drop policy if exists "The service role can manage every message" on public.messages;
create policy "The service role can manage every message" on public.messages
    for all to service_role using (true) with check (true);

-- Document frequencies span every chunk, private ones included: a user can learn how many chunks
-- contain a term, not which. hybrid_search's BM25 weights need the corpus-wide numbers.
drop policy if exists "Signed-in users can read term statistics" on public.term_stats;
create policy "Signed-in users can read term statistics" on public.term_stats
    for select to authenticated, service_role using (true);
drop policy if exists "Signed-in users can read corpus statistics" on public.corpus_stats;
create policy "Signed-in users can read corpus statistics" on public.corpus_stats
    for select to authenticated, service_role using (true);

drop policy if exists "The service role can manage the embedding cache" on public.embedding_cache;
create policy "The service role can manage the embedding cache" on public.embedding_cache
    for all to service_role using (true) with check (true);

-- --- grants ----------------------------------------------------------------------------------------
-- Supabase's default privileges give anon and authenticated ALL (TRUNCATE included, which RLS does
-- not govern) on new tables: start from nothing and grant what each role needs.

grant usage on schema public to authenticated, service_role;
-- pgvector's types and operators, where Supabase keeps them.
grant usage on schema extensions to authenticated, service_role;

revoke all on table
    public.documents, public.chunks, public.conversations, public.messages,
    public.term_stats, public.corpus_stats, public.embedding_cache
from anon, authenticated, service_role;
grant select, insert, update, delete on table
    public.documents, public.chunks, public.conversations, public.messages
to authenticated, service_role;
grant select on table public.term_stats, public.corpus_stats to authenticated, service_role;
grant select, insert, update, delete on table public.embedding_cache to service_role;
grant usage, select on sequence public.chunks_id_seq to authenticated, service_role;
-- The web search cache (012) is the backend's own, like embedding_cache.
revoke all on table public.web_search_cache from anon, authenticated, service_role;

do $$
begin
    -- Alembic's bookkeeping table lives in public too; no API role has any business with it.
    if to_regclass('public.alembic_version') is not null then
        revoke all on table public.alembic_version from anon, authenticated, service_role;
    end if;
end;
$$;
