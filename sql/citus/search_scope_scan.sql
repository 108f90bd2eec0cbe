-- search_scope_scan(max_rows, query_embedding, embedding_dims, embedding_model, k, filter_path,
--                   filter_vars, filter_dates, containment, created_from, created_until, updated_from,
--                   updated_until) (Citus)
--     -> (ids bigint[], nearest bigint[], distances double precision[], scope_count integer)
--
-- Single-node counterpart: sql/search_scope_scan.sql (what it returns, the bounded cost, RLS). On the
-- cluster every read names the tenants in scope (search_tenants()), and the estimate changes: without
-- a filter the scope is exactly the chunks of those tenants, which corpus_stats counts (no estimate);
-- with one, when those tenants hold more than 4 x max_rows chunks, the planner's estimate comes from
-- the workers (Citus's EXPLAIN: one task's remote plan, scaled by the task count). The bounded count
-- and the distances run as multi-shard queries with their LIMIT pushed to each shard. The filter
-- arrives compiled (search_filter()'s parts, as on one node since migration 019), and the path is
-- evaluated only on rows the caller may read, as on one node.
-- Team collections (migrations 024/025): the scope is the single node's (member_of, a narrowed call's
-- union), and the tenants in scope include those holding the collections' documents
-- (search_tenants(collections)). A narrowed call is not counted from corpus_stats (a collection's
-- scope holds the chunks of members who may have left, and a user's own chunks in a collection they
-- are no member of are admitted too): it goes to the bounded count directly.
-- The one-pass read of an unfiltered scope (search_scope_vectors() over chunk_scope_vectors,
-- migrations 029 and 039, ordered by collection / visibility / owner) is not used here: that copy is
-- a table the single node's triggers keep (db distribute drops it), and each statement below names
-- the tenants in scope, so the cluster keeps the bounded count and the distances by primary key,
-- which rank the same rows. Its threshold that grows with sqrt(chunks / 100k) is not
-- applied here either: max_rows as given (a cluster's chunk count is the workers' sum; the shell
-- table's reltuples is 0). Both only decide exact ranking against an HNSW walk above 3,000 admitted
-- chunks (the cluster tests are far below it). Migration 033's changes to the one-pass limit (x
-- sqrt(k / 30)) and its estimate margin (1.5, 1 since migration 035) concern that one-pass read only:
-- nothing to bring here. Migration 041's block sample (a filter estimated between 1 and 4 x the
-- limit, or with a residual path, counted on TABLESAMPLE SYSTEM) and the larger filtered limit for
-- a vector leg of more than 30 neighbours (042, 045; 047's model of it, 1.6 x (chunks / 100k)^(1/3)
-- x sqrt(k / 30), measured on the single node's copy) are not brought here either: a
-- distributed table's sample would be a multi-shard query of its own, and the 4 x margin on the
-- workers' estimate is kept (a residual path's estimate is a third of the tenants' chunks, so a small
-- residual scope of tenants holding more than 12 x max_rows chunks walks; see the single node's notes).
-- Migration 044 counts a filtered scope on the single node's copy, which now holds the filter's
-- columns, and takes its distances in the same pass: the cluster has no copy (above) and keeps its
-- count on the chunks' shards, then the distances by primary key.
-- Migration 046 returns the single node's ids up to 1,000 only, with the scope's size (scope_count), so
-- that its callers build no array of a scope's ids that nothing reads. Here the ids are what the
-- distances are read by (above), and the cluster's hybrid_search reads its full-text leg through them
-- whatever their number (sql/citus/hybrid_search_query.sql): every counted scope's ids come back, and
-- scope_count = their number.
set search_path = public, extensions;

-- Before migration 019 it took the filter itself and compiled it again.
drop function if exists public.search_scope_scan(jsonb, integer, vector, integer, text, integer);

create or replace function public.search_scope_scan(
    max_rows integer,
    query_embedding vector default null,
    embedding_dims integer default null,
    embedding_model text default null,
    k integer default 0,
    filter_path jsonpath default null,
    filter_vars jsonb default '{}',
    filter_dates boolean default false,
    containment jsonb default '{}',
    created_from timestamptz default null,
    created_until timestamptz default null,
    updated_from timestamptz default null,
    updated_until timestamptz default null,
    collections uuid[] default null,
    out ids bigint[],
    out nearest bigint[],
    out distances double precision[],
    out scope_count integer
)
language plpgsql
-- volatile only because PostgreSQL allows EXPLAIN (step 1) in volatile functions alone; it writes nothing.
volatile
security definer
set search_path = public, extensions, pg_temp
set plan_cache_mode = force_custom_plan
as $$
declare
    caller name := coalesce(nullif(current_setting('role'), 'none'), session_user);
    all_rows boolean := pg_has_role(caller, 'service_role', 'usage');
    user_rows boolean := pg_has_role(caller, 'authenticated', 'usage');
    member_of uuid[] := case when user_rows and not all_rows then public.caller_collection_ids() else '{}' end;
    narrowed uuid[] := case when collections is null then null
                            when all_rows then collections
                            else array(select unnest(collections) intersect select unnest(member_of)) end;
    tenants uuid[] := public.search_tenants(collections);
    -- Read here, on the coordinator: inside the statement below Citus would evaluate it on the
    -- workers, where this definer's connection has no request role (it read as the superuser there,
    -- null: every user scope summed to 0 chunks and paid the bounded count before its walk).
    visible uuid[] := public.caller_visibility_scopes();
    plan json;
    job json;
    estimate double precision;
    tenant_chunks bigint;
    -- The path is evaluated only on rows the caller may read (CASE fixes the order), as on one node.
    scope constant text := $q$
        select c.id
        from public.chunks c
        where ($12::uuid[] is not null or $1 or c.visibility = 'public' or c.owner_id = $2
               or c.collection_id = any($11))
          and ($12::uuid[] is null or c.collection_id = any($14)
               or (c.collection_id = any($12) and (c.visibility = 'public' or c.owner_id = $2)))
          and ($3 = '{}'::jsonb or c.metadata @> $3)
          and ($4::timestamptz is null or c.document_created_at >= $4)
          and ($5::timestamptz is null or c.document_created_at <= $5)
          and ($6::timestamptz is null or c.document_updated_at >= $6)
          and ($7::timestamptz is null or c.document_updated_at <= $7)
          and ($8::jsonpath is null
               or case when $1 or c.visibility = 'public' or c.owner_id = $2 or c.collection_id = any($11)
                       then jsonb_path_match(case when $10 then public.search_filter_target(
                           c.metadata, c.document_created_at, c.document_updated_at) else c.metadata end, $8, $9)
                  end)
          and ($15::uuid[] is null or c.tenant_id = any($15))
    $q$;
begin
    if coalesce(max_rows, 0) < 1 then
        return;  -- all null: not counted, walk HNSW
    end if;
    if not (all_rows or user_rows) then
        ids := '{}';
        nearest := '{}';
        distances := '{}';
        scope_count := 0;
        return;
    end if;
    -- Before the filter the scope is every chunk of the tenants in scope (a user reads all of their
    -- own and the public corpus), which corpus_stats counts exactly per scope: no filter, no estimate.
    -- (A narrowed call is left uncounted here: null compares as unknown below.)
    if collections is null then
        select coalesce(sum(cs.nchunks), 0) into tenant_chunks
        from public.corpus_stats cs
        where (tenants is null or cs.tenant_id = any(tenants))
          and (all_rows or cs.scope = any(visible));
    end if;
    if tenant_chunks > max_rows and filter_path is null and coalesce(containment, '{}'::jsonb) = '{}'::jsonb
       and created_from is null and created_until is null and updated_from is null and updated_until is null then
        return;
    end if;
    if tenant_chunks > 4.0 * max_rows then
        -- The planner's estimate, per shard: Citus's EXPLAIN shows one task's remote plan (or each).
        execute 'explain (format json) ' || scope
        into plan
        using all_rows, auth.uid(), coalesce(containment, '{}'::jsonb), created_from, created_until,
              updated_from, updated_until, filter_path, coalesce(filter_vars, '{}'::jsonb),
              coalesce(filter_dates, false), member_of, collections, null::integer, narrowed, tenants;
        job := plan -> 0 -> 'Plan' -> 'Distributed Query' -> 'Job';
        select sum((t -> 'Remote Plan' -> 0 -> 0 -> 'Plan' ->> 'Plan Rows')::double precision)
               * (job ->> 'Task Count')::double precision / greatest(json_array_length(job -> 'Tasks'), 1)
        into estimate
        from json_array_elements(job -> 'Tasks') t;
        if estimate > 4.0 * max_rows then
            return;
        end if;
    end if;
    -- The bounded count reads no embedding: a scope that turns out too large costs only the rechecks.
    -- (Each shard stops at max_rows + 1; the coordinator keeps the first max_rows + 1.)
    execute 'select array(' || scope || ' limit $13)'
    into ids
    using all_rows, auth.uid(), coalesce(containment, '{}'::jsonb), created_from, created_until,
          updated_from, updated_until, filter_path, coalesce(filter_vars, '{}'::jsonb),
          coalesce(filter_dates, false), member_of, collections, max_rows + 1, narrowed, tenants;
    if cardinality(ids) > max_rows then
        ids := null;
        return;
    end if;
    scope_count := cardinality(ids);
    -- Small enough: the distance of every admitted chunk in the query's space, the k nearest kept
    -- (a bounded heap sort). Their heap pages were just read; the embeddings are read out of line.
    select coalesce(array_agg(n.id order by n.distance, n.id), '{}'),
           coalesce(array_agg(n.distance order by n.distance, n.id), '{}')
    into nearest, distances
    from (
        select c.id, c.embedding <=> query_embedding as distance
        from public.chunks c
        where (tenants is null or c.tenant_id = any(tenants))
          and c.id = any(ids)
          and query_embedding is not null
          and c.embedding_dims = search_scope_scan.embedding_dims
          and (search_scope_scan.embedding_model is null
               or c.embedding_model = search_scope_scan.embedding_model)
        order by 2, 1
        limit greatest(coalesce(k, 0), 0)
    ) n;
end;
$$;
-- A definer function reaches every chunk: only the roles the retrieval functions run as may call it.
revoke execute on function public.search_scope_scan(
    integer, vector, integer, text, integer, jsonpath, jsonb, boolean, jsonb,
    timestamptz, timestamptz, timestamptz, timestamptz, uuid[]
) from public, anon;
grant execute on function public.search_scope_scan(
    integer, vector, integer, text, integer, jsonpath, jsonb, boolean, jsonb,
    timestamptz, timestamptz, timestamptz, timestamptz, uuid[]
) to authenticated, service_role;
