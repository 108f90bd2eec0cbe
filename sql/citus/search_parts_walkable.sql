-- search_parts_walkable(tenants, min_chunks) (Citus only) -> boolean
--
-- Whether every shard's part of a search's scope is large enough for its vector leg to walk HNSW
-- rather than sort: each tenant in scope holds at least min_chunks chunks the caller may read (from
-- corpus_stats, per tenant and visibility scope). hybrid_search and match_documents then turn sorting
-- off for their statement (migration 029's rule on one node), because each worker plans its shard's
-- part alone and underestimates it (the tenants named and the policy select the same rows; the planner
-- multiplies them): the public tenant's 9,817 chunks of a 74,669-chunk shard were estimated at 1,285
-- and sorted with their TOASTed embeddings (69k buffers, 92 ms at 1M). A small part keeps the sort
-- (one sorting setting serves every shard): forced to walk, a tenant's 1,000 chunks among 200,000
-- cost hnsw's iterative scan up to its max_scan_tuples, more than the sort of the large part saves.
-- tenants null (the service role, every tenant: no tenant filter, nothing to underestimate): true.
-- SECURITY DEFINER: corpus_stats is not readable by the API roles; only a yes or no comes out.
-- Usage:   select search_parts_walkable(search_tenants(), 3000);
set search_path = public, extensions;

create or replace function public.search_parts_walkable(tenants uuid[], min_chunks integer)
returns boolean
language plpgsql
stable
security definer
set search_path = public, pg_temp
as $$
declare
    -- Read here, on the coordinator (inside the statement it would run on the workers: README.md).
    visible uuid[] := public.caller_visibility_scopes();
    smallest bigint;
begin
    if tenants is null then
        return true;
    end if;
    select min(n) into smallest
    from (
        select t, coalesce(sum(cs.nchunks), 0) as n
        from unnest(tenants) t
        left join public.corpus_stats cs
            on cs.tenant_id = t and (visible is null or cs.scope = any(visible))
        group by t
    ) parts;
    return coalesce(smallest, 0) >= min_chunks;
end;
$$;
revoke execute on function public.search_parts_walkable(uuid[], integer) from public, anon;
grant execute on function public.search_parts_walkable(uuid[], integer) to authenticated, service_role;
