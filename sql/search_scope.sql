-- search_scope(filter, max_rows, collections) -> bigint[]
--
-- The ids of the chunks the caller may read that pass `filter` when there are at most max_rows of
-- them; null when there are more: the filter compiled by search_filter(), then search_scope_scan()
-- without a query vector (see sql/search_scope_scan.sql for the plan, its bounded cost and
-- row-level security).
-- collections (not null) narrows the scope to those team collections (migration 024).
-- Usage:   select cardinality(search_scope('{"tags": ["invoice"]}', 10000));
set search_path = public, extensions;

drop function if exists public.search_scope(jsonb, integer);  -- before 025: no collections

create or replace function public.search_scope(filter jsonb, max_rows integer, collections uuid[] default null)
returns bigint[]
language plpgsql
volatile
set search_path = public, extensions, pg_temp
as $$
begin
    return (select s.ids
            from public.search_filter(filter) f,
                 public.search_scope_scan(max_rows, filter_path => case when f.residual then f.path end,
                                          filter_vars => f.vars, filter_dates => f.dates,
                                          containment => f.containment, created_from => f.created_from,
                                          created_until => f.created_until, updated_from => f.updated_from,
                                          updated_until => f.updated_until, collections => collections) s);
end;
$$;
revoke execute on function public.search_scope(jsonb, integer, uuid[]) from public, anon;
grant execute on function public.search_scope(jsonb, integer, uuid[]) to authenticated, service_role;
