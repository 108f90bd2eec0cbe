-- hybrid_search_terms(query_text, common_term_ratio, common_term_min_df, match_df_budget) (Citus)
--     -> (term_queries, term_idfs, match_query, avg_length, terms)
--
-- Single-node counterpart: sql/hybrid_search_terms.sql, whose header explains every column; this is
-- the same function over the statistics of sql/citus/term_stats_after_insert.sql, kept per tenant and
-- visibility scope: N, the average length and each lexeme's document frequency are sums over the
-- scopes the caller may read (caller_visibility_scopes(), as on one node), i.e. exactly the single
-- node's numbers, so the idf weights and the GIN match are the same. A user's scopes (the public
-- corpus, their own chunks, their collections') live in the search's tenants (search_tenants(): the
-- public one, theirs, and those holding their collections' documents), so both reads visit only those
-- shards; the service path's read every shard. SECURITY DEFINER as on one node: no API role
-- may read the statistics.
--   select * from hybrid_search_terms('袋鼠 澳洲 动物');
set search_path = public, extensions;

create or replace function public.hybrid_search_terms(
    query_text text,
    common_term_ratio double precision default 0.1,
    common_term_min_df integer default 5000,
    match_df_budget integer default 2000
)
returns table (
    term_queries tsquery[],
    term_idfs double precision[],
    match_query tsquery,
    avg_length double precision,
    terms jsonb
)
language plpgsql
stable
security definer
set search_path = public, pg_temp
set plan_cache_mode = force_custom_plan
as $fn$
#variable_conflict use_column
declare
    visible uuid[] := public.caller_visibility_scopes();  -- null: every scope
    tenants uuid[] := public.search_tenants();  -- the shards holding those scopes; null: every one
    query_lexemes text[] := tsvector_to_array(to_tsvector('simple'::regconfig, coalesce(query_text, '')));
    n_chunks double precision;
    mean_length double precision;
    df_lexemes text[];
    df_counts bigint[];
begin
    -- Two reads over the shards, each a plain aggregate Citus pushes down; the rest is the single
    -- node's query over these values (a CTE over distributed tables would cost an intermediate result).
    -- The sums over tenants are the corpus-wide N, average length and df of the single-node rows.
    select coalesce(sum(cs.nchunks), 0)::double precision,
           coalesce(sum(cs.total_lexemes)::double precision / nullif(sum(cs.nchunks), 0), 1)
    into n_chunks, mean_length
    from public.corpus_stats cs
    -- A user's scopes live in their tenants (public: the public tenant, own: theirs, a collection: the
    -- tenants of its documents' owners): the shards pruned.
    where (tenants is null or cs.tenant_id = any(tenants)) and (visible is null or cs.scope = any(visible));
    select coalesce(array_agg(g.lexeme), '{}'), coalesce(array_agg(g.ndoc), '{}')
    into df_lexemes, df_counts
    from (select ts.lexeme, sum(ts.ndoc)::bigint as ndoc
          from public.term_stats ts
          where ts.lexeme = any(query_lexemes)
            and (tenants is null or ts.tenant_id = any(tenants)) and (visible is null or ts.scope = any(visible))
          group by ts.lexeme) g;
    return query
    with stats as (
        select n_chunks as n_chunks, mean_length as avg_length
    ),
    terms as (
        select t.lexeme, coalesce(d.ndoc, 0) as df
        from unnest(query_lexemes) as t(lexeme)
        left join unnest(df_lexemes, df_counts) as d(lexeme, ndoc) on d.lexeme = t.lexeme
    ),
    weighted as (
        select t.lexeme, t.df,
               ln(1 + (greatest(s.n_chunks - t.df, 0) + 0.5) / (t.df + 0.5)) as idf,
               t.df > greatest(common_term_ratio * s.n_chunks, common_term_min_df) as common,
               row_number() over (order by t.df, t.lexeme) as rarity,
               sum(t.df) over (order by t.df, t.lexeme) as cumulative_df
        from terms t, stats s
    ),
    matched as (
        select w.*,
               not w.common and (w.cumulative_df <= match_df_budget or w.rarity = 1) as in_match
        from weighted w
    ),
    conjuncts as (
        -- For a conjunction, a term contained in a longer query term adds nothing (jieba's search
        -- mode indexes 杰克 and 克逊 wherever it indexes 杰克逊): the two rarest of the others.
        select m.lexeme,
               row_number() over (order by m.df, length(m.lexeme) desc, m.lexeme) as rank_in_and
        from matched m
        where not exists (select 1 from matched o
                          where o.lexeme <> m.lexeme and strpos(o.lexeme, m.lexeme) > 0)
    ),
    chosen as (
        -- Even the rarest term is in more chunks than the budget: match the chunks that contain
        -- both of the two rarest such terms. Otherwise, if every term is common, the two rarest match.
        select m.*,
               min(m.df) over () > match_df_budget as conjunctive,
               case when min(m.df) over () > match_df_budget
                    then coalesce(j.rank_in_and <= 2, false)
                    else m.in_match or (not bool_or(m.in_match) over () and m.rarity <= 2)
               end as matches
        from matched m
        left join conjuncts j on j.lexeme = m.lexeme
    )
    select array_agg(public.lexemes_tsquery(array[c.lexeme]) order by c.lexeme),
           array_agg(c.idf order by c.lexeme),
           case when bool_and(c.conjunctive) and count(*) filter (where c.matches) = 2
                then (select public.lexemes_tsquery(array[j1.lexeme])
                             && public.lexemes_tsquery(array[j2.lexeme])
                      from conjuncts j1, conjuncts j2
                      where j1.rank_in_and = 1 and j2.rank_in_and = 2)
                else public.lexemes_tsquery(array_agg(c.lexeme) filter (where c.matches))
           end,
           (select s.avg_length from stats s),
           coalesce(jsonb_agg(jsonb_build_object('lexeme', c.lexeme, 'df', c.df,
                                                 'idf', round(c.idf::numeric, 3), 'common', c.common,
                                                 'matched', c.matches) order by c.rarity), '[]'::jsonb)
    from chosen c;
end;
$fn$;
-- A definer function reads the statistics of every scope: only the roles searches run as may call it.
revoke execute on function public.hybrid_search_terms(text, double precision, integer, integer) from public, anon;
grant execute on function public.hybrid_search_terms(text, double precision, integer, integer)
    to authenticated, service_role;
