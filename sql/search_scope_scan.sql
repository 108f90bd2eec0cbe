-- search_scope_scan(max_rows, query_embedding, embedding_dims, embedding_model, k, filter_path,
--                   filter_vars, filter_dates, containment, created_from, created_until, updated_from,
--                   updated_until, collections)
--     -> (ids bigint[], nearest bigint[], distances double precision[], scope_count integer)
--
-- How many chunks the caller may read pass a compiled filter (scope_count) when there are at most
-- max_rows of them; null when there are more. hybrid_search and match_documents pass
-- exact_scan_threshold: a count back means the scope is small enough to rank exactly (every admitted
-- row, no HNSW), null means walk HNSW as usual. ids: the admitted chunks' ids when there are at most
-- 1,000 of them (hybrid_search's full-text leg reads those by key; above that it reads its match first,
-- migration 033, and needs none), or, without a query vector, whatever their number (search_scope():
-- the ids are the answer); null otherwise. Before migration 046 every counted scope's ids came back,
-- and building the array cost ~1.4 ms a 20k scope at 1M of the 9 ms its exact plan took.
-- The filter arrives compiled, as search_filter() returns it (its caller compiled it once per call):
-- filter_path is its path when residual (else null), filter_vars / filter_dates its vars / dates,
-- then containment and the four date bounds. With the grammar of search_filter, a DBA writes
--   select s.* from search_filter('{"lang": "zh"}') f,
--        search_scope_scan(3000, $1, 384, null, 10, case when f.residual then f.path end, f.vars,
--                          f.dates, f.containment, f.created_from, f.created_until, f.updated_from,
--                          f.updated_until) s;
-- and search_scope(filter, max_rows) gives the ids alone.
-- When there are few enough, it also computes the cosine distance of each admitted chunk in the
-- query's embedding space (embedding_dims, and embedding_model when not null): `nearest` holds the k
-- closest ids, closest first (ties by id), `distances` their distances. The callers rank the exact
-- plan's vector leg from these arrays instead of reading every admitted row again.
--
-- The threshold (migration 029): max_rows as given for a corpus of up to 100k chunks; with a query
-- vector, max_rows x sqrt(chunks / 100k) above that (pg_class.reltuples), and for a scope ranked in
-- one pass of chunk_scope_vectors_idx (below) 2.5 x that (2 x before 039) times sqrt(k / 30) when
-- k > 30 (migration 033). A filtered scope's limit, up to 1,280 dimensions (ranked on the copy), is
-- 1.6 x max_rows x (chunks / 100k)^(1/3), at least 1.6 x max_rows, times sqrt(k / 30) when that is
-- above 1 (migration 047; 045: the sqrt(N) one x sqrt(k / 30)); above 1,280 dimensions the sqrt(N)
-- one x 0.7 x sqrt(k / 30) when above 1 (042). Measured (bench.latency.crossover --filtered): the
-- filtered exact plan read from chunk_scope_vectors (044) ties the walk near 9.5-10k admitted chunks
-- at 1M for match_documents (21 against 20 ms at 9,951) and near 20k for hybrid_search (55 against
-- 55 ms at 19,900; its full-text leg and fusion cost in both plans, and the walk for 120 candidates
-- passes 4 x the tuples); at 100k near 5.5k and 9.3k. With 3,000 the limits are 4,800 and 9,600 at
-- 100k, 10,342 and 20,683 at 1M. Before 041 a larger limit lengthened the count a scope above it paid
-- before its walk (sqrt(2) x sqrt(k / 30): 80 -> 114 ms at 2 %, 19 -> 109 at 10 %); the block sample
-- of step 1 now stands in for that count. Call it `the limit` here.
-- Bounded cost, in three steps:
--   1. the planner's estimate of the scope (EXPLAIN of the statement below, from the table's
--      statistics, a fraction of a millisecond): above 4 x the limit (1 x for a scope ranked in one
--      pass, estimated from the policies' columns alone; migrations 033, 035) the answer is null at once;
--      between 1 and 4 x, or above 1 x with a residual path (whose estimate is a constant third of
--      the rows), a block sample of the scope decides (migrations 041, 042): above the limit, null;
--   2. otherwise the admitted chunks, at most the limit + 1 of them (LIMIT; on the copy, below, 1.25 x
--      the limit + 1, and a scope of up to 1.25 x the limit counted there is ranked exactly: its
--      distances are in hand, migration 048), through the indexes that
--      serve the scope: the statement is planned for this call's values. With a query vector of up to
--      1,280 dimensions it reads chunk_scope_vectors, which holds the filter's columns beside each
--      chunk's half-precision vector (migration 044): chunk_scope_vectors_metadata_idx (GIN) for the
--      top-level $eq / $contains conditions, its date indexes, chunk_scope_vectors_idx for
--      collections, the policies' rule and the rest of the filter checked on the rows they admit,
--      and each admitted chunk's distance taken in the same pass. Otherwise (search_scope(), or more
--      dimensions) it reads chunks — chunks_metadata_idx, chunks_document_created_at_idx /
--      chunks_document_updated_at_idx, chunks_visibility_owner_id_idx / chunks_owner_id_idx — and no
--      embedding;
--   3. only when at most the limit came back, the k nearest: the scope_pool_size(k) nearest by half
--      precision measured again at full precision from the rows (scope_nearest); above 1,280
--      dimensions every admitted row by primary key, each embedding read once.
-- An estimate that is too high only costs the HNSW walk the search would have done anyway; one that
-- is too low costs the bounded count.
--
-- Row-level security: SECURITY DEFINER, because under RLS none of those conditions could use an index
-- (their operators are not LEAKPROOF). It applies the chunk policies' rule for the calling role
-- itself, as hybrid_search_visible_matches does: service_role (or a superuser) every chunk,
-- authenticated the public ones, its own and those of its collections (caller_collection_ids(), 024),
-- anyone else none. collections (not null) narrows the scope to those collections' chunks
-- (chunks_collection_id_idx serves it; the estimate of step 1 sees its size). The callers read the rows through the
-- primary key, where RLS applies again: a disagreement could only lose rows, never show one.
-- The path is evaluated only on rows the policies' rule admits: a caller could pass any jsonpath,
-- and one that fails or runs long on another tenant's row would tell something about that row.
-- Usage:   select scope_count, nearest, distances from search_scope_scan(3000, $1, 384, null, 10);
-- EXPLAIN: the statement is the $q$ text below; `explain analyze` it with the values filled in.
set search_path = public, extensions;

-- Before 019 it took the filter itself and compiled it again (a third time per hybrid_search call);
-- before 025 it had no collections.
drop function if exists public.search_scope_scan(jsonb, integer, vector, integer, text, integer);
drop function if exists public.search_scope_scan(
    integer, vector, integer, text, integer, jsonpath, jsonb, boolean, jsonb,
    timestamptz, timestamptz, timestamptz, timestamptz
);
-- Before 046 it returned no scope_count (a new output: the function is created again).
drop function if exists public.search_scope_scan(
    integer, vector, integer, text, integer, jsonpath, jsonb, boolean, jsonb,
    timestamptz, timestamptz, timestamptz, timestamptz, uuid[]
);

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
    -- the collections the caller reads (migration 024); evaluated once, for this statement
    member_of uuid[] := case when user_rows and not all_rows then public.caller_collection_ids() else '{}' end;
    -- A narrowed call (collections not null) admits the chunks of those collections the caller is a
    -- member of, and those of them the caller reads anyway (public, own): written as that union, the
    -- planner estimates it from collection_id's statistics (before 029 it multiplied the narrowing by
    -- the policies' rule, correlated with it: ~1 % estimated for a collection of 9,306 of 100k chunks).
    narrowed uuid[] := case when collections is null then null
                            when all_rows then collections
                            else array(select unnest(collections) intersect select unnest(member_of)) end;
    plan json;
    pool bigint[];
    chunk_count double precision;
    query_half halfvec;
    -- The threshold follows the corpus (issue 31, migration 029): max_rows is the threshold of a
    -- corpus of up to 100k chunks; with a query vector it grows with the square root of the chunk
    -- count (pg_class.reltuples, the planner's statistics): the exact plan's cost grows with the
    -- admitted chunks n, the filtered HNSW walk's with the chunks it passes to find its candidates,
    -- ~ N / n of them, so the two meet near n ~ sqrt(N). search_scope() (no vector) keeps max_rows.
    rows_limit integer;
    -- A scope without a filter is ranked in one pass of chunk_scope_vectors (search_scope_vectors),
    -- 5-7x cheaper per admitted chunk than the heap path: it admits 2.5 times as many (twice in 029;
    -- 039's half-precision pass costs 0.6-0.9 us a chunk at 1M against 1.1-1.6 for 029's full
    -- vectors, and the crossover grows as the square root of that ratio, 1.25x), and more when the
    -- caller asks for more than 30 neighbours (migration 033): the filtered walk passes ~k x N / n
    -- tuples before k of them are in scope, so the crossover grows as sqrt(k x N) — hybrid_search's
    -- vector leg (k = 4 x match_count, 120) crosses at twice match_documents' scope (k 30) and is
    -- limited at 2x (at 1M: 47,434 admitted chunks against 23,717).
    one_pass boolean;
    -- The estimate's margin (step 1): a scope estimated above margin x the limit is not counted; a
    -- filter's estimate can be off by far more than the policies' columns'. For a scope ranked in one
    -- pass the margin is 1 (migration 035): that pass is the count, so a scope found above the limit
    -- has read `limit` vectors for nothing before its walk (at 1M, 20k admitted: 36-38 ms against a
    -- 15-16 ms walk and a 24 ms exact ranking), and the policies' columns (owner, visibility,
    -- collections) are estimated within a few per cent: near the limit, where a wrong estimate can
    -- send a scope either way, the two plans cost about the same.
    margin double precision := 4.0;
    -- The ids come back for a scope of at most this many chunks (or without a query vector): above it
    -- no caller reads them (hybrid_search_query's full-text leg, migration 033).
    ids_limit constant integer := 1000;
    estimate double precision;
    -- Where the planner's estimate cannot decide (migration 041), a block sample of the scope does:
    -- SAMPLE_HITS admitted rows expected in it for a scope of `the limit`.
    sample_hits constant double precision := 30;
    sample_share double precision;
    sampled bigint;
    -- How many admitted chunks step 2 reads before it gives up (migration 048): the limit, or on the
    -- copy 1.25 x it. There a scope found between 1 and 1.25 x the limit has its distances in hand,
    -- and ranking it costs only the pool's full-precision measure, where giving up cost the count and
    -- then the walk (at 100k, 9,856 admitted chunks against a limit of 9,600: 43.8 ms p50, 28.4 when
    -- it walked at once); a scope above 1.25 x reads a quarter more for nothing, and the estimate and
    -- the sample of step 1 send few such scopes (at 1.25 x the limit the sample expects 37.5 hits,
    -- at most 30 in ~12 % of the samples).
    read_limit integer;
    -- The path is evaluated only on rows the caller may read (CASE fixes the order): it comes from
    -- the caller, and on another tenant's row an error or its cost could tell something about it.
    -- format(): %1$s the columns after the id (none, or the half-precision distance of step 2), %2$s
    -- the relation read as c: chunks, a block sample of it (step 1), or chunk_scope_vectors, which
    -- holds the same columns of every chunk (step 2, migration 044).
    scope constant text := $q$
        select c.id%1$s
        from %2$s
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
    $q$;
begin
    if coalesce(max_rows, 0) < 1 then
        return;  -- all null: not counted, walk HNSW
    end if;
    rows_limit := max_rows;
    select greatest(c.reltuples, 0) into chunk_count from pg_class c where c.oid = 'public.chunks'::regclass;
    if query_embedding is not null then
        rows_limit := least(ceil(max_rows * greatest(1.0, sqrt(chunk_count / 100000.0))), 1000000);
    end if;
    -- chunk_scope_vectors holds every chunk, with its vector up to 1,280 dimensions (migration 039;
    -- 029's index held the 384-d ones, and the one pass was for a corpus all 384-d)
    one_pass := query_embedding is not null and search_scope_scan.embedding_dims <= 1280
       and filter_path is null and coalesce(containment, '{}'::jsonb) = '{}'::jsonb
       and created_from is null and created_until is null and updated_from is null and updated_until is null
       and (user_rows and not all_rows or collections is not null);
    if one_pass then
        rows_limit := least(ceil(2.5 * rows_limit * sqrt(greatest(coalesce(k, 0), 30) / 30.0)), 1000000);
    elsif query_embedding is not null and search_scope_scan.embedding_dims <= 1280 then
        -- a filtered scope on the copy (migration 047): 1.6 x max_rows x (chunks / 100k)^(1/3) (at least
        -- 1.6 x max_rows), x sqrt(k / 30) when that is above 1 — the crossover measured on the copy at
        -- 100k and 1M (bench.latency.crossover --filtered): match_documents ~5.5k and ~9.75k,
        -- hybrid_search's leg of 120 ~9.3k and ~20k, which grow as N^0.25-0.34, not as sqrt(N) (029's
        -- model, measured on the heap path; 045 set sqrt(N) x sqrt(k / 30), 1.5-1.8 x below the
        -- crossover at 100k). Near the crossover the two plans' medians tie, and the exact plan's tail
        -- is the shorter (no heap page read at random): the limit sits at or just above it.
        rows_limit := least(ceil(1.6 * max_rows * greatest(1.0, (chunk_count / 100000.0) ^ (1.0 / 3.0))
                                 * greatest(1.0, sqrt(greatest(coalesce(k, 0), 30) / 30.0))), 1000000);
    elsif query_embedding is not null then
        -- a filtered scope above 1,280 dimensions, on the heap path (migration 042): 0.7 x sqrt(k / 30)
        rows_limit := least(ceil(rows_limit * greatest(1.0, 0.7 * sqrt(greatest(coalesce(k, 0), 30) / 30.0))),
                            1000000);
    end if;
    if not (all_rows or user_rows) then
        ids := '{}';
        nearest := '{}';
        distances := '{}';
        scope_count := 0;
        return;
    end if;
    execute 'explain (format json) ' || format(scope, '', 'public.chunks c')
    into plan
    using all_rows, auth.uid(), coalesce(containment, '{}'::jsonb), created_from, created_until,
          updated_from, updated_until, filter_path, coalesce(filter_vars, '{}'::jsonb),
          coalesce(filter_dates, false), member_of, collections, null::integer, narrowed;
    estimate := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
    -- Two estimates cannot decide (migration 041): a filter's between 1 and 4 x the limit (a metadata
    -- condition is estimated from a histogram of ~100 rows: in steps of ~1 % of the table, at 1M the
    -- limit itself), and any estimate with a residual path (a jsonpath condition is estimated as a
    -- third of the rows whatever it says: a range that admits 528 of 1M chunks walked HNSW, and the
    -- walk's bound on the tuples it passes returned 7-14 of 30 rows, recall@10 0.3-0.8). For those,
    -- the scope is counted on a block sample of the table (TABLESAMPLE SYSTEM, REPEATABLE: the same
    -- pages for the same table, so the same question plans the same way) sized for SAMPLE_HITS rows
    -- at the limit; above the limit it walks, at once — at 1M 3-5 ms for ~2,000 rows, where the
    -- bounded count of a scope above the limit costs 13-17 ms before the walk. (041 sampled from 1.5 x
    -- and walked above 1.5 x; 042 samples from 1 x, the sample standing in for a count that would
    -- mostly find the scope above the limit: near the limit the two plans cost about the same.)
    if one_pass then
        if estimate > rows_limit then
            return;
        end if;
    -- Without a query vector (search_scope(): the ids are the answer, there is no walk to choose) a
    -- filter is counted as before 041; a residual path is still sampled, so that a small one is
    -- counted rather than answered null from its estimate (migration 043).
    elsif estimate > rows_limit
          and (filter_path is not null or query_embedding is not null and estimate <= margin * rows_limit) then
        sample_share := sample_hits / rows_limit;
        if sample_share < 1 then
            execute 'select count(*) from ('
                    || format(scope, '', 'public.chunks c tablesample system ($13) repeatable (0)') || ') s'
            into sampled
            using all_rows, auth.uid(), coalesce(containment, '{}'::jsonb), created_from, created_until,
                  updated_from, updated_until, filter_path, coalesce(filter_vars, '{}'::jsonb),
                  coalesce(filter_dates, false), member_of, collections, 100 * sample_share, narrowed;
            if sampled > sample_hits then
                return;
            end if;
            -- A residual path with nothing an index serves beside it is counted by reading the whole
            -- table (at 1M ~1.2 s), whatever the scope's size; the walk stays the plan as long as it
            -- finds k rows of the scope before hnsw.max_scan_tuples (it passes ~k x N / n tuples),
            -- twice over. Below that it would return fewer than k rows, and the whole read is the price
            -- of the right ones (a range admitting 528 of 1M chunks: 30 of 30 rows in 1.2 s, where
            -- the walk returned 7-14 in 80-200 ms; one admitting 9,430 walks, 17-60 ms).
            if filter_path is not null and query_embedding is not null
               and plan -> 0 -> 'Plan' ->> 'Node Type' = 'Seq Scan'
               and sampled / sample_share * coalesce(nullif(current_setting('hnsw.max_scan_tuples', true), ''),
                                                     '20000')::double precision
                   >= 2 * greatest(coalesce(k, 0), 1) * chunk_count then
                return;
            end if;
        end if;
    elsif estimate > margin * rows_limit then
        return;
    end if;
    -- Without a filter the scope is the policies' columns alone, which chunk_scope_vectors_idx
    -- (migration 039) holds with the vectors in half precision, ordered by scope: count and rank it in
    -- one pass of that index, the nearest measured again at full precision (search_scope_vectors).
    if one_pass then
        select v.ids, v.nearest, v.distances, v.scope_count into ids, nearest, distances, scope_count
        from public.search_scope_vectors(rows_limit, query_embedding, embedding_model, k, auth.uid(),
                                         member_of, collections, narrowed, ids_limit) v;
        return;
    end if;
    -- Step 2. Up to 1,280 dimensions chunk_scope_vectors holds the filter's columns too (migration
    -- 044): the scope is counted there, and each admitted chunk's distance in half precision taken in
    -- the same pass — one scan of the copy's narrow rows through its indexes (metadata, dates,
    -- collection), the policies' rule and the rest of the filter checked on them — the
    -- scope_pool_size(k) nearest kept and measured again at full precision (scope_nearest), as
    -- search_scope_vectors does; the ids are read up to ids_limit + 1 only (migration 046). (039-043
    -- counted the scope on chunks, then read the copy by primary key: at 1M a 1 % filter took 59 ms
    -- where this takes 30, a 2 % one 108 where this takes 62.) Read up to read_limit + 1 (above).
    read_limit := rows_limit;
    if query_embedding is not null and search_scope_scan.embedding_dims <= 1280 then
        read_limit := least(ceil(1.25 * rows_limit), 1000000);
        query_half := public.scope_vector(query_embedding);
        execute format(
            'with s as materialized (%s limit $13) '
            'select (select count(*) from s), array(select s.id from s limit $19 + 1), '
            '       array(select s.id from s where s.distance is not null order by s.distance, s.id limit $18)',
            format(scope, ', case when c.embedding_dims = $16 and ($17::text is null or c.embedding_model = $17)'
                          ' then c.embedding <=> $15 end as distance',
                   'public.chunk_scope_vectors c'))
        into scope_count, ids, pool
        using all_rows, auth.uid(), coalesce(containment, '{}'::jsonb), created_from, created_until,
              updated_from, updated_until, filter_path, coalesce(filter_vars, '{}'::jsonb),
              coalesce(filter_dates, false), member_of, collections, read_limit + 1, narrowed,
              query_half, search_scope_scan.embedding_dims, embedding_model, public.scope_pool_size(k),
              ids_limit;
    else
        -- No vector (search_scope()) or more than 1,280 dimensions: the ids from chunks, a bounded
        -- count that reads no embedding; then (with a vector) every admitted row by primary key.
        execute 'select array(' || format(scope, '', 'public.chunks c') || ' limit $13)'
        into ids
        using all_rows, auth.uid(), coalesce(containment, '{}'::jsonb), created_from, created_until,
              updated_from, updated_until, filter_path, coalesce(filter_vars, '{}'::jsonb),
              coalesce(filter_dates, false), member_of, collections, read_limit + 1, narrowed;
        scope_count := cardinality(ids);
        pool := ids;
    end if;
    if scope_count > read_limit then
        ids := null;
        scope_count := null;
        return;
    end if;
    if cardinality(ids) > ids_limit and query_embedding is not null then
        ids := null;
    end if;
    select n.nearest, n.distances into nearest, distances
    from public.scope_nearest(pool, query_embedding, search_scope_scan.embedding_dims, embedding_model, k) n;
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
