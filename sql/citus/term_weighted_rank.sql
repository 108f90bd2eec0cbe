-- term_weighted_rank(fts, term_queries, term_idfs) (Citus only) -> double precision
--
-- The full-text leg's BM25-style numerator, sum over query terms of idf(t) * ts_rank(fts, t): the
-- scalar subquery of sql/hybrid_search_query.sql as a function, because Citus pushes a function call
-- down to the shards but refuses a subquery in the select list of a query over several shards. Same
-- terms, same order, same float arithmetic as the single-node expression.
set search_path = public, extensions;

create or replace function public.term_weighted_rank(fts tsvector, term_queries tsquery[], term_idfs double precision[])
returns double precision
language sql
immutable
parallel safe
as $$
    select sum(w.idf * ts_rank(fts, w.q)) from unnest(term_queries, term_idfs) as w(q, idf)
$$;
