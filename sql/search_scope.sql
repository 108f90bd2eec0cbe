-- search_scope(filter, max_rows) -> bigint[]
--
-- The ids of the chunks the caller may read that pass `filter` when there are at most max_rows of
-- them; null when there are more: search_scope_scan() without a query vector (see
-- sql/search_scope_scan.sql for the plan, its bounded cost and row-level security).
-- Usage:   select cardinality(search_scope('{"tags": ["invoice"]}', 10000));
set search_path = public, extensions;

create or replace function public.search_scope(filter jsonb, max_rows integer)
returns bigint[]
language plpgsql
volatile
set search_path = public, extensions, pg_temp
as $$
begin
    return (select s.ids from public.search_scope_scan(filter, max_rows) s);
end;
$$;
revoke execute on function public.search_scope(jsonb, integer) from public, anon;
grant execute on function public.search_scope(jsonb, integer) to authenticated, service_role;
