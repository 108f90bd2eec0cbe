-- 024: team collections -- documents shared with members who hold a role (issue 27).
--
-- * collections(id, owner_id, name): a named set of documents. Its owner is always one of its admins.
-- * collection_members(collection_id, user_id, role): viewer (search, chat, read), editor (+ add,
--   re-ingest, delete the collection's documents), admin (+ rename it, manage members). The owner's
--   row is written by a trigger when the collection is created and cannot be removed or demoted.
-- * documents.collection_id: a document belongs to its owner and to at most ONE collection. One
--   collection per document keeps every chunk in exactly one term-statistics scope (migration 018:
--   the collection's id, counted once, summed by the members), keeps the policies to an equality on a
--   column of the chunk itself, and makes "re-ingest" and "delete" unambiguous for an editor. A text
--   two teams need is ingested into each (the embedding cache makes the second copy cheap).
-- * chunks.collection_id: copied from the document by the triggers of 013 (sql/), so the chunk
--   policies need no join. Deleting a collection leaves its documents to their owners (ON DELETE SET
--   NULL): a collection is a way of sharing, not of owning, and an admin must not be able to destroy
--   the work of the members who uploaded it; the documents become their owners' private ones again.
-- * caller_collection_ids(min_role): the collections the caller (auth.uid()) holds at least that role
--   in. STABLE SECURITY DEFINER, called as (select ...) in the policies: evaluated once per statement
--   (an InitPlan), never cached beyond it, so a membership change counts from the next statement.
-- * collection ids are never chosen by a client (a trigger draws them): a collection's id is a
--   term-statistics and embedding-cache scope key, and one set to another user's id would open that
--   user's scope to the collection's members.

set search_path = public, extensions;

-- --- tables ------------------------------------------------------------------------------------------

create table if not exists public.collections (
    id uuid primary key default gen_random_uuid(),
    owner_id uuid not null default auth.uid(),
    name text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint collections_name_check check (length(btrim(name)) between 1 and 200)
);
alter table public.collections enable row level security;
comment on table public.collections is
    'A team''s collection of documents, shared with collection_members by role (migration 024).';
create index if not exists collections_owner_id_idx on public.collections (owner_id);

create table if not exists public.collection_members (
    collection_id uuid not null references public.collections (id) on delete cascade,
    user_id uuid not null,
    role text not null,
    added_at timestamptz not null default now(),
    primary key (collection_id, user_id),
    constraint collection_members_role_check check (role in ('viewer', 'editor', 'admin'))
);
alter table public.collection_members enable row level security;
comment on table public.collection_members is
    'Who may read (viewer), also write (editor) or also manage (admin) a collection''s documents.';
-- caller_collection_ids() reads a user's memberships: (user_id, collection_id, role) answers it from
-- the index alone.
create index if not exists collection_members_user_id_idx
    on public.collection_members (user_id, collection_id) include (role);

alter table public.documents add column if not exists collection_id uuid
    references public.collections (id) on delete set null;
alter table public.documents drop constraint if exists documents_collection_is_private;
alter table public.documents add constraint documents_collection_is_private
    check (collection_id is null or visibility = 'private');
comment on column public.documents.collection_id is
    'The one collection the document is shared in (its members read it, its editors write it); null: its owner''s alone.';
create index if not exists documents_collection_id_idx on public.documents (collection_id, updated_at desc)
    where collection_id is not null;

alter table public.chunks add column if not exists collection_id uuid;
comment on column public.chunks.collection_id is
    'Copied from the document by triggers (as owner_id and visibility), so chunk policies need no join.';
create index if not exists chunks_collection_id_idx on public.chunks (collection_id)
    where collection_id is not null;

alter table public.conversations add column if not exists collections uuid[];
comment on column public.conversations.collections is
    'The scope the conversation searches: these collections only; null: everything its owner may read.';

-- --- the caller's collections ----------------------------------------------------------------------------

create or replace function public.caller_collection_ids(min_role text default 'viewer')
returns uuid[]
language sql
stable
security definer
set search_path = public, pg_temp
as $$
    select coalesce(array_agg(m.collection_id order by m.collection_id), '{}')
    from public.collection_members m
    where m.user_id = auth.uid()
      and case m.role when 'admin' then 3 when 'editor' then 2 else 1 end
          >= case min_role when 'admin' then 3 when 'editor' then 2 else 1 end
$$;
comment on function public.caller_collection_ids(text) is
    'The collections auth.uid() holds at least min_role (viewer < editor < admin) in; for policies: '
    '(select caller_collection_ids()). Migration 024.';
revoke execute on function public.caller_collection_ids(text) from public, anon;
grant execute on function public.caller_collection_ids(text) to authenticated, service_role;

-- --- triggers on the new tables ------------------------------------------------------------------------

create or replace function public.collections_before_write()
returns trigger
language plpgsql
set search_path = public, pg_temp
as $$
begin
    if tg_op = 'INSERT' then
        new.id := gen_random_uuid();  -- never the client's: the id is a statistics and cache scope key
        new.created_at := now();
    elsif new.id <> old.id or new.owner_id is distinct from old.owner_id then
        raise exception 'a collection keeps its id and its owner' using errcode = '42501';
    end if;
    new.updated_at := now();
    return new;
end;
$$;
drop trigger if exists collections_before_write on public.collections;
create trigger collections_before_write
    before insert or update on public.collections
    for each row execute function public.collections_before_write();

create or replace function public.collections_owner_is_admin()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    insert into public.collection_members (collection_id, user_id, role)
    values (new.id, new.owner_id, 'admin');
    return null;
end;
$$;
drop trigger if exists collections_owner_is_admin on public.collections;
create trigger collections_owner_is_admin
    after insert on public.collections
    for each row execute function public.collections_owner_is_admin();

-- The owner stays an admin: their row is neither removed nor demoted while the collection exists
-- (deleting the collection removes it through the cascade, when the collection is already gone).
create or replace function public.collection_members_keep_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    if exists (select 1 from public.collections c where c.id = old.collection_id and c.owner_id = old.user_id)
       and (tg_op = 'DELETE' or new.role <> 'admin' or new.user_id <> old.user_id
            or new.collection_id <> old.collection_id) then
        raise exception 'the owner of collection % stays its admin', old.collection_id using errcode = '42501';
    end if;
    return case when tg_op = 'DELETE' then old else new end;
end;
$$;
drop trigger if exists collection_members_keep_owner on public.collection_members;
create trigger collection_members_keep_owner
    before update or delete on public.collection_members
    for each row execute function public.collection_members_keep_owner();

revoke execute on function public.collections_before_write(), public.collections_owner_is_admin(),
    public.collection_members_keep_owner()
from public, anon, authenticated, service_role;

-- --- policies ----------------------------------------------------------------------------------------------
-- (select caller_collection_ids(...)) is an InitPlan: once per statement, then an index-friendly
-- `= any(array)` on the row's own column (Supabase's RLS performance guide). The cast makes `any` take
-- the subquery's array as an expression (without it, any((select ...)) compares with each row of it).

drop policy if exists "Members can read their collections" on public.collections;
create policy "Members can read their collections" on public.collections
    for select to authenticated
    using (owner_id = (select auth.uid()) or id = any((select public.caller_collection_ids())::uuid[]));
drop policy if exists "Users can create collections of their own" on public.collections;
create policy "Users can create collections of their own" on public.collections
    for insert to authenticated
    with check (owner_id = (select auth.uid()));
drop policy if exists "Admins can rename their collections" on public.collections;
create policy "Admins can rename their collections" on public.collections
    for update to authenticated
    using (id = any((select public.caller_collection_ids('admin'))::uuid[]))
    with check (id = any((select public.caller_collection_ids('admin'))::uuid[]));
drop policy if exists "Owners can delete their collections" on public.collections;
create policy "Owners can delete their collections" on public.collections
    for delete to authenticated
    using (owner_id = (select auth.uid()));
drop policy if exists "The service role can manage every collection" on public.collections;
create policy "The service role can manage every collection" on public.collections
    for all to service_role using (true) with check (true);

drop policy if exists "Members can read the members of their collections" on public.collection_members;
create policy "Members can read the members of their collections" on public.collection_members
    for select to authenticated
    using (collection_id = any((select public.caller_collection_ids())::uuid[]));
drop policy if exists "Admins can add members" on public.collection_members;
create policy "Admins can add members" on public.collection_members
    for insert to authenticated
    with check (collection_id = any((select public.caller_collection_ids('admin'))::uuid[]));
drop policy if exists "Admins can change roles" on public.collection_members;
create policy "Admins can change roles" on public.collection_members
    for update to authenticated
    using (collection_id = any((select public.caller_collection_ids('admin'))::uuid[]))
    with check (collection_id = any((select public.caller_collection_ids('admin'))::uuid[]));
drop policy if exists "Admins can remove members, members can leave" on public.collection_members;
create policy "Admins can remove members, members can leave" on public.collection_members
    for delete to authenticated
    using (user_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('admin'))::uuid[]));
drop policy if exists "The service role can manage every membership" on public.collection_members;
create policy "The service role can manage every membership" on public.collection_members
    for all to service_role using (true) with check (true);

-- Documents and chunks: the rules of 013, plus the collection. Read: public, own, or in a collection
-- the caller is a member of. Write (update, delete): own, or in a collection the caller edits. A
-- document goes into a collection only by one of its editors (insert, and the new row of an update).

drop policy if exists "Users can read public documents and their own" on public.documents;
drop policy if exists "Users can read public documents, their own and their teams'" on public.documents;
create policy "Users can read public documents, their own and their teams'" on public.documents
    for select to authenticated
    using (visibility = 'public' or owner_id = (select auth.uid())
           or collection_id = any((select public.caller_collection_ids())::uuid[]));
drop policy if exists "Users can add private documents of their own" on public.documents;
create policy "Users can add private documents of their own" on public.documents
    for insert to authenticated
    with check (visibility = 'private' and owner_id = (select auth.uid())
                and (collection_id is null or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])));
drop policy if exists "Users can change their own private documents" on public.documents;
drop policy if exists "Users can change their own documents and their collections'" on public.documents;
create policy "Users can change their own documents and their collections'" on public.documents
    for update to authenticated
    using (visibility = 'private'
           and (owner_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])))
    with check (visibility = 'private'
                and (owner_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('editor'))::uuid[]))
                and (collection_id is null or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])));
drop policy if exists "Users can delete their own private documents" on public.documents;
drop policy if exists "Users can delete their own documents and their collections'" on public.documents;
create policy "Users can delete their own documents and their collections'" on public.documents
    for delete to authenticated
    using (visibility = 'private'
           and (owner_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])));

drop policy if exists "Users can read public chunks and their own" on public.chunks;
drop policy if exists "Users can read public chunks, their own and their teams'" on public.chunks;
create policy "Users can read public chunks, their own and their teams'" on public.chunks
    for select to authenticated
    using (visibility = 'public' or owner_id = (select auth.uid())
           or collection_id = any((select public.caller_collection_ids())::uuid[]));
drop policy if exists "Users can add chunks to their own private documents" on public.chunks;
drop policy if exists "Users can add chunks to the documents they may change" on public.chunks;
create policy "Users can add chunks to the documents they may change" on public.chunks
    for insert to authenticated
    with check (visibility = 'private'
                and (owner_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('editor'))::uuid[]))
                and (collection_id is null or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])));
drop policy if exists "Users can change chunks of their own private documents" on public.chunks;
drop policy if exists "Users can change chunks of the documents they may change" on public.chunks;
create policy "Users can change chunks of the documents they may change" on public.chunks
    for update to authenticated
    using (visibility = 'private'
           and (owner_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])))
    with check (visibility = 'private'
                and (owner_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])));
drop policy if exists "Users can delete chunks of their own private documents" on public.chunks;
drop policy if exists "Users can delete chunks of the documents they may change" on public.chunks;
create policy "Users can delete chunks of the documents they may change" on public.chunks
    for delete to authenticated
    using (visibility = 'private'
           and (owner_id = (select auth.uid()) or collection_id = any((select public.caller_collection_ids('editor'))::uuid[])));

-- --- grants ----------------------------------------------------------------------------------------------

revoke all on table public.collections, public.collection_members from anon, authenticated, service_role;
grant select, insert, update, delete on table public.collections, public.collection_members
    to authenticated, service_role;

-- --- chunks follow their document's collection (the triggers of 013/016/018, one column more) -----------

create or replace function public.chunks_inherit_document_access()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    doc record;
begin
    select d.owner_id, d.visibility, d.collection_id, d.metadata, d.created_at, d.updated_at into doc
    from public.documents d where d.id = new.document_id;
    if new.document_id is not null
       and (tg_op = 'INSERT' or new.document_id is distinct from old.document_id)
       and (not found
            or not (doc.visibility = 'public' or doc.owner_id = auth.uid()
                    or doc.collection_id = any(public.caller_collection_ids())
                    or public.caller_visibility_scopes() is null)) then
        raise exception 'document % does not exist', new.document_id
            using errcode = 'foreign_key_violation';
    end if;
    if found then
        new.owner_id := doc.owner_id;
        new.visibility := doc.visibility;
        new.collection_id := doc.collection_id;
        new.document_created_at := public.document_date(doc.metadata, doc.created_at);  -- as in 016
        new.document_updated_at := doc.updated_at;
    end if;
    return new;
end;
$$;

drop trigger if exists chunks_inherit_document_access on public.chunks;
create trigger chunks_inherit_document_access
    before insert or update of document_id, owner_id, visibility, collection_id, document_created_at,
        document_updated_at
    on public.chunks
    for each row execute function public.chunks_inherit_document_access();

create or replace function public.documents_propagate_access()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
    created timestamptz := public.document_date(new.metadata, new.created_at);
begin
    -- Ingestion deletes a document's chunks before it rewrites the row, so this finds none then.
    update public.chunks c
    set owner_id = new.owner_id, visibility = new.visibility, collection_id = new.collection_id,
        document_created_at = created, document_updated_at = new.updated_at
    where c.document_id = new.id
      and (c.owner_id is distinct from new.owner_id or c.visibility is distinct from new.visibility
           or c.collection_id is distinct from new.collection_id
           or c.document_created_at is distinct from created
           or c.document_updated_at is distinct from new.updated_at);
    return null;
end;
$$;

drop trigger if exists documents_propagate_access on public.documents;
create trigger documents_propagate_access
    after update of owner_id, visibility, collection_id, created_at, updated_at, metadata on public.documents
    for each row
    when (old.owner_id is distinct from new.owner_id or old.visibility is distinct from new.visibility
          or old.collection_id is distinct from new.collection_id
          or old.created_at is distinct from new.created_at or old.updated_at is distinct from new.updated_at
          or old.metadata -> 'created_at' is distinct from new.metadata -> 'created_at')
    execute function public.documents_propagate_access();

-- A document's owner changes on the service path (or as the backend's own role) only: a collection's
-- editors may rewrite its documents, not take them over or hand them to someone outside it (their
-- owner reads them whatever the collection). Users never could change an owner (013's check).
create or replace function public.documents_keep_owner()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    if new.owner_id is distinct from old.owner_id and public.caller_visibility_scopes() is not null then
        raise exception 'document % keeps its owner', old.id using errcode = '42501';
    end if;
    return new;
end;
$$;
drop trigger if exists documents_keep_owner on public.documents;
create trigger documents_keep_owner
    before update of owner_id on public.documents
    for each row execute function public.documents_keep_owner();
revoke execute on function public.documents_keep_owner() from public, anon, authenticated, service_role;

-- --- erasure: what a reader may keep of a document ------------------------------------------------------
-- readable_document_ids() (018) decides what a stored answer keeps: a member reads the collection's
-- documents. When a member leaves (or is removed) or a document leaves a collection, the stored
-- answers of those who can no longer read it are rewritten at once, as after a deletion (018).

create or replace function public.readable_document_ids(ids text[], reader uuid)
returns text[]
language sql
security definer
set search_path = public, pg_temp
as $$
    select coalesce(array_agg(x.id::text), '{}')
    from (
        select d.id from public.documents d
        where d.id = any(array(
                  select i::uuid from unnest(ids) as i
                  where i ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'))
          and (reader is null or d.visibility = 'public' or d.owner_id = reader
               or exists (select 1 from public.collection_members m
                          where m.collection_id = d.collection_id and m.user_id = reader))
        for key share of d
    ) x
$$;
revoke execute on function public.readable_document_ids(text[], uuid)
    from public, anon, authenticated, service_role;

-- Rewrites the stored answers citing these documents (of `owners` only, when given): the BEFORE
-- triggers of 018 then erase what their owner may no longer read.
create or replace function public.erase_unreadable_copies(gone text[], owners uuid[] default null)
returns void
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    if gone is null or cardinality(gone) = 0 then
        return;
    end if;
    update public.messages m set sources = m.sources
    where public.cited_document_ids(m.sources, m.metadata) && gone
      and (owners is null or m.owner_id = any(owners));
    update public.research_runs r set result = r.result
    where public.cited_document_ids(r.result -> 'sources') && gone
      and (owners is null or r.owner_id = any(owners));
end;
$$;

create or replace function public.collection_members_erase_copies()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    perform public.erase_unreadable_copies(
        array(select d.id::text from public.documents d, gone_members g where d.collection_id = g.collection_id),
        array(select g.user_id from gone_members g));
    return null;
end;
$$;
drop trigger if exists collection_members_erase_copies on public.collection_members;
create trigger collection_members_erase_copies
    after delete on public.collection_members
    referencing old table as gone_members
    for each statement execute function public.collection_members_erase_copies();

create or replace function public.documents_moved_erase_copies()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    perform public.erase_unreadable_copies(array(
        select n.id::text from old_documents o join new_documents n on n.id = o.id
        where o.collection_id is not null and o.collection_id is distinct from n.collection_id));
    return null;
end;
$$;
drop trigger if exists documents_moved_erase_copies on public.documents;
create trigger documents_moved_erase_copies
    after update on public.documents
    referencing old table as old_documents new table as new_documents
    for each statement execute function public.documents_moved_erase_copies();

revoke execute on function
    public.chunks_inherit_document_access(), public.documents_propagate_access(),
    public.erase_unreadable_copies(text[], uuid[]), public.collection_members_erase_copies(),
    public.documents_moved_erase_copies()
from public, anon, authenticated, service_role;

-- --- the embedding cache: a collection's documents are cached in the collection's scope (020) ----------

create or replace function public.embedding_cache_forget_deleted_documents()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
    delete from public.embedding_cache e
    using (
        select distinct coalesce(g.collection_id, g.owner_id, '00000000-0000-0000-0000-000000000000'::uuid)
                   as scope,
               g.embed_hash
        from gone g
        where g.embed_hash is not null
          and not exists (select 1 from public.documents d where d.id = g.document_id)
    ) f
    where e.scope = f.scope and e.content_hash = f.embed_hash;
    return null;
end;
$$;
revoke execute on function public.embedding_cache_forget_deleted_documents()
from public, anon, authenticated, service_role;
