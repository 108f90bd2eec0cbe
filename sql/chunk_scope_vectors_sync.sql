-- chunk_scope_vectors_sync() -> trigger (statement level, after insert / update / delete / truncate on
-- chunks)
--
-- Keeps chunk_scope_vectors (migration 039) equal to the chunks: one row per chunk with the columns
-- the policies read (collection_id, visibility, owner_id), the columns a search filter reads (metadata,
-- document_created_at, document_updated_at; migration 044), its embedding's space (dims, model) and
-- its embedding in half precision (scope_vector()). Statement triggers with transition tables, as the term
-- statistics' (one statement per COPY batch, INSERT ... SELECT or UPDATE, not one per row):
--   insert    the new chunks' rows;
--   update    the rows of the chunks whose scope or filter columns, embedding or model changed (a
--             document moved into or out of a collection, made public or private, re-dated, re-embedded),
--             as an upsert;
--   delete    the rows of the deleted chunks;
--   truncate  every row.
-- SECURITY DEFINER: a user's ingest writes chunks under RLS; chunk_scope_vectors is read and written by
-- no API role (RLS on, no policy, no grant): only search_scope_vectors() and search_scope_scan() read
-- it, for the caller's scope as search_scope_scan computed it.
--
-- Usage:   fires on every write to chunks. After a load with triggers off (session_replication_role =
--          replica), rebuild it with migration 039's statement:
--            truncate chunk_scope_vectors; insert into chunk_scope_vectors select c.id, c.collection_id,
--            c.visibility, c.owner_id, c.embedding_dims, c.embedding_model, scope_vector(c.embedding),
--            c.metadata, c.document_created_at, c.document_updated_at from chunks c;
set search_path = public, extensions;

create or replace function public.chunk_scope_vectors_sync()
returns trigger
language plpgsql
security definer
set search_path = public, extensions, pg_temp
as $$
begin
    if tg_op = 'INSERT' then
        insert into public.chunk_scope_vectors (id, collection_id, visibility, owner_id, embedding_dims,
                                                embedding_model, embedding, metadata, document_created_at,
                                                document_updated_at)
        select n.id, n.collection_id, n.visibility, n.owner_id, n.embedding_dims, n.embedding_model,
               public.scope_vector(n.embedding), n.metadata, n.document_created_at, n.document_updated_at
        from new_rows n;
    elsif tg_op = 'UPDATE' then
        -- an upsert: a chunk written while the triggers were off gets its row at its next change
        insert into public.chunk_scope_vectors as s (id, collection_id, visibility, owner_id, embedding_dims,
                                                     embedding_model, embedding, metadata, document_created_at,
                                                     document_updated_at)
        select n.id, n.collection_id, n.visibility, n.owner_id, n.embedding_dims, n.embedding_model,
               public.scope_vector(n.embedding), n.metadata, n.document_created_at, n.document_updated_at
        from new_rows n join old_rows o on o.id = n.id
        where (n.collection_id, n.visibility, n.owner_id, n.embedding_model, n.embedding, n.metadata,
               n.document_created_at, n.document_updated_at)
              is distinct from (o.collection_id, o.visibility, o.owner_id, o.embedding_model, o.embedding,
                                o.metadata, o.document_created_at, o.document_updated_at)
        on conflict (id) do update
        set collection_id = excluded.collection_id, visibility = excluded.visibility,
            owner_id = excluded.owner_id, embedding_dims = excluded.embedding_dims,
            embedding_model = excluded.embedding_model, embedding = excluded.embedding,
            metadata = excluded.metadata, document_created_at = excluded.document_created_at,
            document_updated_at = excluded.document_updated_at;
    elsif tg_op = 'DELETE' then
        delete from public.chunk_scope_vectors s using old_rows o where s.id = o.id;
    else
        truncate public.chunk_scope_vectors;
    end if;
    return null;
end;
$$;
revoke execute on function public.chunk_scope_vectors_sync() from public, anon, authenticated, service_role;
