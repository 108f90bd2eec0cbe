-- assert_embedding_space(dims, model) (Citus) -> boolean
--
-- Single-node counterpart: sql/assert_embedding_space.sql: true when the chunks the search reads were
-- embedded in the query's space; false when there are none; SQLSTATE 22023 naming the stored models
-- otherwise. On the cluster "the chunks the search reads" are those of the caller's tenants
-- (search_tenants()), so the check runs on the search's own shards instead of every shard (a user's
-- search stays on their shard). A difference from one node only when tenants were embedded by
-- different models: then each tenant's searches are checked against its own chunks.
set search_path = public, extensions;

create or replace function public.assert_embedding_space(dims integer, model text default null)
returns boolean
language plpgsql
stable
set search_path = public, extensions, pg_temp
set plan_cache_mode = force_custom_plan  -- Citus prunes the shards from the tenants' values
as $$
declare
    tenants uuid[] := public.search_tenants();
    stored text;
begin
    -- LIMIT 1: Citus plans EXISTS over several shards as a subquery it pulls whole; the limit goes
    -- down to each shard.
    if exists (
        select 1 from public.chunks c
        where (tenants is null or c.tenant_id = any(tenants))
          and c.embedding_dims = dims and (model is null or c.embedding_model = model)
        limit 1
    ) then
        return true;
    end if;
    select string_agg(format('%s (%s dimensions)', s.embedding_model, s.embedding_dims), ', '
                      order by s.embedding_dims, s.embedding_model)
    into stored
    from (select distinct c.embedding_dims, c.embedding_model from public.chunks c
          where tenants is null or c.tenant_id = any(tenants)) s;
    if stored is null then
        return false;
    end if;
    raise exception 'query embedding (% dimensions%) does not match the stored chunks: %',
        dims, coalesce(', model ' || model, ''), stored
        using errcode = '22023',
              hint = 'Embed the query with the model that embedded the corpus, or re-embed the corpus '
                     'with the current model: python -m backend reembed';
end;
$$;
