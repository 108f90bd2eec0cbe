-- hybrid_search_terms(query_text, common_term_ratio, common_term_min_df, match_df_budget)
--     -> (term_queries, term_idfs, match_query, avg_length, terms)
--
-- What hybrid_search's full-text leg does with a query, before it runs: one tsquery and one idf per
-- distinct query term ($12, $13 of hybrid_search_query), the tsquery the GIN index matches ($2:
-- the OR of the uncommon terms, rarest first while their document frequencies add up to at most
-- match_df_budget; when even the rarest term is in more chunks than the budget, the AND of the two
-- rarest terms not contained in a longer query term, so the rows scored stay bounded on any corpus
-- size), the average
-- chunk length in lexemes ($15), and per term {lexeme, df, idf, common, matched} for reading a plan.
--   select * from hybrid_search_terms('袋鼠 澳洲 动物');
-- idf = ln(1 + (N - df + 0.5) / (df + 0.5)), N and df from corpus_stats / term_stats, counted over the
-- visibility scopes the caller may read (caller_visibility_scopes(): the public corpus and the caller's
-- own chunks for a user, every scope for the service path and the backend's own role). A word that
-- only another user's private chunks contain therefore has df 0 and the idf of an unknown word.
-- SECURITY DEFINER (migration 018): the statistics tables are readable by no API role; this function
-- hands out the numbers of the query's own terms only, within the caller's scopes.
-- Resolves pgvector's types whether it lives in `extensions` (Supabase) or `public`.
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
parallel safe
security definer
set search_path = public, pg_temp
as $$
declare
    visible uuid[] := public.caller_visibility_scopes();  -- null: every scope
    lexemes text[] := tsvector_to_array(to_tsvector('simple'::regconfig, coalesce(query_text, '')));
    dfs bigint[];
    n_chunks double precision;
    mean_length double precision;
begin
    -- The counts of the caller's scopes. Two forms, each a probe of the primary key (lexeme, scope)
    -- per term: a user's reads two rows per term (the public scope and their own) however many users
    -- there are; the service path's reads one row per scope that holds the term. PL/pgSQL keeps the
    -- plans of these statements for the session (the single-statement SQL form was re-planned per call).
    if visible is null then
        select coalesce(sum(cs.nchunks), 0),
               coalesce(sum(cs.total_lexemes)::double precision / nullif(sum(cs.nchunks), 0), 1)
        into n_chunks, mean_length
        from public.corpus_stats cs;
        select array_agg(coalesce((select sum(ts.ndoc) from public.term_stats ts
                                   where ts.lexeme = u.lexeme), 0)::bigint order by u.i)
        into dfs
        from unnest(lexemes) with ordinality as u(lexeme, i);
    else
        select coalesce(sum(cs.nchunks), 0),
               coalesce(sum(cs.total_lexemes)::double precision / nullif(sum(cs.nchunks), 0), 1)
        into n_chunks, mean_length
        from public.corpus_stats cs
        where cs.scope = any(visible);
        select array_agg(coalesce((select sum(ts.ndoc) from public.term_stats ts
                                   where ts.lexeme = u.lexeme and ts.scope = any(visible)), 0)::bigint
                         order by u.i)
        into dfs
        from unnest(lexemes) with ordinality as u(lexeme, i);
    end if;
    return query
    with stats as (
        select n_chunks, mean_length as avg_length
    ),
    terms as (
        select t.lexeme, t.df from unnest(lexemes, dfs) as t(lexeme, df)
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
$$;
-- A definer function reads the statistics of every scope: only the roles searches run as may call it.
revoke execute on function public.hybrid_search_terms(text, double precision, integer, integer) from public, anon;
grant execute on function public.hybrid_search_terms(text, double precision, integer, integer)
    to authenticated, service_role;
