-- 037_hnsw_m32.sql: the 384-d HNSW index with m = 32 (issue 31, recall >= 0.95 at 1M).
--
-- At 1M chunks of the latency benchmark's corpus, m = 16 (ef_construction 128, migration 031) left
-- recall@10 at 0.945 unfiltered and 0.937 / 0.938 with a 50 % / 10 % filter at ef_search 200, with
-- 2-3 questions in 100 getting none of their true top 10: their nearest chunks are a tight group the
-- graph does not lead into from the rest, until the beam is 600-1,000 wide. m = 32 gives 0.970 /
-- 0.977 / 0.978 at the same ef_search for ~1.5-2 ms more per walk (3.9 -> 5.9 ms p50 unfiltered), the
-- index 3.5 % larger (2,026 against 1,957 MB), built in 746 s on 2 quiet cores (docs/benchmarks.md,
-- "Migration 034 at 1M"). ef_search 400 on the m = 16 graph comes close (0.963 / 0.967 / 0.970 at
-- about the same cost): the setting for a DBA who cannot rebuild (RAG_HNSW_EF_SEARCH,
-- RAG_HNSW_FILTERED_EF_SEARCH). Other dimensions keep their index (not measured).
-- A small table is rebuilt here; a large one is left as it is — rebuilding it would hold the upgrade
-- for minutes — and the notice names the concurrent rebuild a DBA runs in a quiet hour.
set search_path = public, extensions;
do $$
begin
    if (select count(*) from (select 1 from public.chunks where embedding_dims = 384 limit 100001) s) <= 100000 then
        drop index if exists public.chunks_embedding_384_hnsw_idx;
        create index chunks_embedding_384_hnsw_idx on public.chunks
            using hnsw ((embedding::vector(384)) vector_cosine_ops)
            with (m = 32, ef_construction = 128)
            where embedding_dims = 384;
    else
        raise notice 'chunks_embedding_384_hnsw_idx keeps its m (over 100,000 chunks). To rebuild it with '
            'm = 32 without blocking searches (~13 min per million chunks on 2 cores): create index '
            'concurrently chunks_embedding_384_hnsw_new on public.chunks using hnsw ((embedding::vector(384)) '
            'vector_cosine_ops) with (m = 32, ef_construction = 128) where embedding_dims = 384; drop index '
            'concurrently public.chunks_embedding_384_hnsw_idx; alter index public.chunks_embedding_384_hnsw_new '
            'rename to chunks_embedding_384_hnsw_idx;';
    end if;
end;
$$;
