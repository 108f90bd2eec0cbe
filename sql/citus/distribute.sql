-- distribute.sql: the tables of a migrated pgrag database distributed over a Citus cluster.
--
-- Run by `python -m backend db distribute` on the coordinator, after the ordinary migrations
-- (supabase/migrations, unchanged: they still build the single-node schema first). One transaction:
-- it either distributes everything or changes nothing; on an already distributed database it does
-- nothing. The functions of sql/citus/ are installed after it (db distribute does both).
--
-- The layout (docs/scaling.md "Distributing on Citus" says why):
--   tenant_id      a new column on every user table: owner_id, or the public tenant
--                  00000000-0000-0000-0000-000000000000 for rows without an owner (the shared corpus,
--                  the service path's conversations). Citus refuses NULL in a distribution column and
--                  owner_id is NULL for the shared corpus, hence a column of its own. Its default,
--                  current_tenant() = the writer's auth.uid() or the public tenant, is evaluated on the
--                  coordinator before the row is routed, so the application writes exactly what it
--                  writes on one node; a CHECK (tenant_id = tenant_key(owner_id)) refuses a row whose
--                  tenant and owner disagree (clear error, nothing stored on the wrong shard).
--   distributed by tenant_id, one co-location group:
--                  documents, chunks, conversations, messages, research_runs, term_stats, corpus_stats.
--                  A tenant's rows, its chunks' term statistics (per visibility scope since migration
--                  018: a scope is its tenant, except private chunks without an owner, kept in the
--                  public tenant, so the statistics' keys are (tenant_id, lexeme, scope) and
--                  (tenant_id, scope)) and its conversations share a shard, so foreign keys, the
--                  triggers that copy access columns, maintain statistics and erase copies, and a
--                  tenant's search stay on one node.
--   in the same co-location group by their own caller key (migration 020):
--                  embedding_cache by scope (the owner of the document, or the public scope: the
--                  chunk's tenant, so the trigger that forgets a deleted document's entries writes the
--                  shard beside it) and web_search_cache by caller (the user, or the public tenant for
--                  the service path): a user's cached entries live on their own shard.
--   unchanged (local tables of the coordinator): alembic_version, and api_keys (migration 021): a key is
--                  looked up by its hash once per request, on the coordinator, and joined with nothing;
--                  no worker needs it, and its RLS applies there as on one node; collections and
--                  collection_members (migration 024): their triggers write each other (the owner's
--                  admin row, the owner kept), which triggers on shards could not. A collection's
--                  documents stay in their owners' tenants (a document's tenant never changes when it
--                  moves into or out of a collection; its unique key and re-ingestion work as on one
--                  node); a member's search adds the tenants holding the collections' documents
--                  (search_tenants()); the policies keep their collection terms, which on a worker read
--                  the request's memberships (caller_collection_ids(), apply_collection_grants()); and the
--                  ingestion job queue, ingest_jobs and ingest_job_files (migration 026): workers claim
--                  files across every tenant with FOR UPDATE SKIP LOCKED, a row lock Citus does not take in a
--                  multi-shard statement; the rows are joined with nothing of a tenant's (the file's
--                  documents are then written as its owner, to the owner's shard) and a file's body
--                  is dropped once it is ingested, so the queue stays small on the coordinator.
-- Keys grow the tenant: primary keys (tenant_id, id); chunks' and messages' foreign keys
-- (tenant_id, document_id) / (tenant_id, conversation_id); unique constraints keep their names
-- (documents_owner_external_id_key is what ingestion's ON CONFLICT names).
-- A public document must have no owner here (documents_public_is_the_public_tenant): otherwise it would
-- live on its owner's shard, outside the public tenant every user's search reads.
-- Policies: Citus refuses subqueries in policies of distributed tables, so `(select auth.uid())` becomes
-- `auth.uid()` (same rows; evaluated per row instead of once per statement).

set search_path = public, extensions;

create or replace function public.tenant_key(owner uuid)
returns uuid
language sql
immutable
parallel safe
as $$ select coalesce(owner, '00000000-0000-0000-0000-000000000000'::uuid) $$;
comment on function public.tenant_key(uuid) is
    'Citus: the distribution key of a row owned by `owner` (the public tenant, all zeros, for none).';

-- pgrag.write_tenant: set (set_config, on the coordinator, where defaults are evaluated) by a write
-- that is not the writer's own row -- a collection editor re-ingesting another member's document
-- (backend/db/repositories/document_rewrite.py) writes the chunks into the owner's tenant. It cannot
-- open anything: the chunk's trigger finds its document only in that tenant, copies the owner from it,
-- and the policies still decide whether the writer may add chunks to that document.
create or replace function public.current_tenant()
returns uuid
language sql
stable
parallel safe
as $$
    select coalesce(nullif(current_setting('pgrag.write_tenant', true), '')::uuid, public.tenant_key(auth.uid()))
$$;
comment on function public.current_tenant() is
    'Citus: the tenant of the writing user, or pgrag.write_tenant when set (the default of every tenant_id column).';

-- research_runs' references to a deleted conversation or message become null (single node: ON DELETE
-- SET NULL, migration 015), on the co-located shard of research_runs.
create or replace function public.research_runs_forget_deleted()
returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
begin
    if tg_argv[0] = 'conversation' then
        update public.research_runs r set conversation_id = null
        where r.tenant_id = old.tenant_id and r.conversation_id = old.id;
    else
        update public.research_runs r set message_id = null
        where r.tenant_id = old.tenant_id and r.message_id = old.id;
    end if;
    return old;
end;
$$;
revoke execute on function public.research_runs_forget_deleted() from public, anon, authenticated, service_role;

-- Migration 039's half-precision copy of the vectors (chunk_scope_vectors) serves the single node's
-- one-pass exact plan, which the cluster does not use (sql/citus/search_scope_scan.sql): its triggers
-- would write a coordinator table from the shards. Dropped with them before the chunks are distributed.
drop trigger if exists chunks_scope_vectors_insert on public.chunks;
drop trigger if exists chunks_scope_vectors_update on public.chunks;
drop trigger if exists chunks_scope_vectors_delete on public.chunks;
drop trigger if exists chunks_scope_vectors_truncate on public.chunks;
drop table if exists public.chunk_scope_vectors;

do $distribute$
declare
    tenant_tables constant text[] := array[
        'documents', 'chunks', 'conversations', 'messages', 'research_runs', 'term_stats', 'corpus_stats'];
    owned_tables constant text[] := array['documents', 'chunks', 'conversations', 'messages', 'research_runs'];
    shards integer := coalesce(nullif(current_setting('pgrag.shard_count', true), '')::integer,
                               current_setting('citus.shard_count')::integer);
    t text;
    p record;
    qual text;
    check_expr text;
    misplaced bigint;
begin
    if to_regclass('public.chunks') is null or to_regclass('public.research_runs') is null then
        raise exception 'the pgrag schema is not migrated here'
            using hint = 'run python -m backend db upgrade first, then db distribute';
    end if;
    if exists (select 1 from pg_dist_partition where logicalrelid = 'public.documents'::regclass) then
        raise notice 'pgrag tables are already distributed: layout unchanged';
        return;
    end if;
    select count(*) into misplaced from public.documents where visibility = 'public' and owner_id is not null;
    if misplaced > 0 then
        raise exception '% public documents have an owner; on Citus the shared corpus is the public tenant', misplaced
            using hint = 'make them private, or clear their owner_id, then run db distribute again';
    end if;

    -- 1. tenant_id on every tenant table, filled from the owner (statistics are rebuilt below). The
    -- triggers rest until the end: their single-node bodies would fire on the shards as rows are copied.
    foreach t in array tenant_tables loop
        execute format('alter table public.%I disable trigger user', t);
        execute format('alter table public.%I add column if not exists tenant_id uuid', t);
    end loop;
    foreach t in array owned_tables loop
        execute format('update public.%I set tenant_id = public.tenant_key(owner_id)', t);
        execute format('alter table public.%I add constraint %I check (tenant_id = public.tenant_key(owner_id))',
                       t, t || '_tenant_is_owner');
    end loop;
    delete from public.term_stats;
    delete from public.corpus_stats;
    foreach t in array tenant_tables loop
        execute format('alter table public.%I alter column tenant_id set default public.current_tenant(), '
                       'alter column tenant_id set not null', t);
        execute format('comment on column public.%I.tenant_id is %L', t,
                       'Citus distribution key: owner_id, or the public tenant (all zeros) when there is none.');
    end loop;
    alter table public.documents add constraint documents_public_is_the_public_tenant
        check (visibility = 'private' or owner_id is null);

    -- 2. keys with the tenant: foreign keys first (they depend on the primary keys they reference).
    alter table public.chunks drop constraint chunks_document_id_fkey;
    alter table public.messages drop constraint messages_conversation_id_fkey;
    alter table public.research_runs drop constraint research_runs_conversation_id_fkey;
    alter table public.research_runs drop constraint research_runs_message_id_fkey;
    foreach t in array array['documents', 'chunks', 'conversations', 'messages', 'research_runs'] loop
        execute format('alter table public.%I drop constraint %I, add constraint %I primary key (tenant_id, id)',
                       t, t || '_pkey', t || '_pkey');
    end loop;
    alter table public.term_stats drop constraint term_stats_pkey,
        add constraint term_stats_pkey primary key (tenant_id, lexeme, scope);
    alter table public.corpus_stats drop constraint corpus_stats_pkey,
        add constraint corpus_stats_pkey primary key (tenant_id, scope);
    alter table public.documents drop constraint documents_owner_external_id_key,
        add constraint documents_owner_external_id_key unique nulls not distinct (tenant_id, owner_id, external_id);
    alter table public.chunks drop constraint chunks_document_position_key,
        add constraint chunks_document_position_key unique (tenant_id, document_id, position);
    -- The full-text leg looks statistics up by lexeme across tenants.
    create index if not exists term_stats_lexeme_idx on public.term_stats (lexeme);

    -- 3. the policies without subqueries (Citus creates them on every shard).
    for p in
        select * from pg_policies
        where schemaname = 'public' and tablename = any(tenant_tables || array['embedding_cache', 'web_search_cache'])
    loop
        qual := replace(p.qual, '( SELECT auth.uid() AS uid)', 'auth.uid()');
        check_expr := replace(p.with_check, '( SELECT auth.uid() AS uid)', 'auth.uid()');
        -- the collection terms keep their function, called per row (Citus refuses the subquery; on a
        -- worker the function reads the request's grants: sql/citus/caller_collection_ids.sql)
        qual := regexp_replace(qual, '\( SELECT (caller_collection_ids\([^)]*\)) AS caller_collection_ids\)',
                               '\1', 'g');
        check_expr := regexp_replace(check_expr,
                                     '\( SELECT (caller_collection_ids\([^)]*\)) AS caller_collection_ids\)',
                                     '\1', 'g');
        if qual ilike '%select%' or check_expr ilike '%select%' then
            raise exception 'policy % on % has a subquery Citus cannot distribute: %', p.policyname, p.tablename,
                coalesce(qual, check_expr);
        end if;
        if qual is distinct from p.qual or check_expr is distinct from p.with_check then
            execute format('drop policy %I on public.%I', p.policyname, p.tablename);
            execute format('create policy %I on public.%I as %s for %s to %s%s%s', p.policyname, p.tablename,
                           p.permissive, p.cmd,
                           (select string_agg(quote_ident(r), ', ') from unnest(p.roles) r),
                           coalesce(' using (' || qual || ')', ''),
                           coalesce(' with check (' || check_expr || ')', ''));
        end if;
    end loop;

    -- 4. distribute, parents first; then the co-located foreign keys. documents.collection_id keeps no
    -- foreign key to the coordinator's collections (Citus refuses one from a distributed table to a local
    -- one): deleting a collection releases its documents through collections_release_documents
    -- (sql/citus/), its ON DELETE SET NULL. documents_moved_erase_copies would rewrite other users'
    -- stored answers from a shard, on their shards: not on the cluster (docs/scaling.md).
    alter table public.documents drop constraint if exists documents_collection_id_fkey;
    drop trigger if exists documents_moved_erase_copies on public.documents;
    perform create_distributed_table('public.documents', 'tenant_id', shard_count => shards);
    foreach t in array array['chunks', 'conversations', 'messages', 'research_runs', 'term_stats', 'corpus_stats'] loop
        perform create_distributed_table(format('public.%I', t), 'tenant_id', colocate_with => 'public.documents');
    end loop;
    perform create_distributed_table('public.embedding_cache', 'scope', colocate_with => 'public.documents');
    perform create_distributed_table('public.web_search_cache', 'caller', colocate_with => 'public.documents');

    alter table public.chunks add constraint chunks_document_id_fkey foreign key (tenant_id, document_id)
        references public.documents (tenant_id, id) on delete cascade;
    alter table public.messages add constraint messages_conversation_id_fkey foreign key (tenant_id, conversation_id)
        references public.conversations (tenant_id, id) on delete cascade;
    -- Citus refuses ON DELETE SET NULL on a key that holds the distribution column: the references are
    -- checked (NO ACTION) and research_runs_forget_deleted() clears them before a delete instead.
    alter table public.research_runs add constraint research_runs_conversation_id_fkey
        foreign key (tenant_id, conversation_id) references public.conversations (tenant_id, id);
    alter table public.research_runs add constraint research_runs_message_id_fkey
        foreign key (tenant_id, message_id) references public.messages (tenant_id, id);
    create trigger research_runs_forget_conversation before delete on public.conversations
        for each row execute function public.research_runs_forget_deleted('conversation');
    create trigger research_runs_forget_message before delete on public.messages
        for each row execute function public.research_runs_forget_deleted('message');
    foreach t in array tenant_tables loop
        execute format('alter table public.%I enable trigger user', t);
    end loop;
end;
$distribute$;
