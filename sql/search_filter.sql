-- search_filter(filter) -> (path, vars, dates, containment, created_from, created_until,
--                           updated_from, updated_until)
--
-- Compiles the `filter` argument of hybrid_search / match_documents (one jsonb value) into what
-- the statements evaluate per chunk. The function a caller calls compiles once and passes these parts
-- down. Linear in the filter's size since migration 019 (~20 us of CPU per value):
--   path, vars     a jsonpath predicate and its variables: jsonb_path_match(target, path, vars), where
--                  target is the chunk's metadata (or search_filter_target(...) when `dates`). Values
--                  only ever travel in vars; the path holds operators, quoted field names and $vN.
--   containment    metadata @> containment holds for every chunk the filter admits (built from the
--                  top-level $eq and $contains conditions): lets the GIN index chunks_metadata_idx
--                  narrow the scope before the exact check.
--   created_from .. updated_until
--                  inclusive bounds of the top-level date conditions ($gt / $lt move the bound by
--                  the timestamp resolution, 1 microsecond): the btree indexes on the chunks'
--                  document dates serve them.
--   residual       false when containment and the date bounds say exactly what the filter says (every
--                  top-level condition is a scalar $eq, a $contains or a date comparison): the path
--                  need not be evaluated at all. Evaluating it per row costs a few microseconds, and
--                  ~15 when it reads a date (the target object is built per row).
-- An empty filter ('{}' or null) compiles to a null path: no condition at all.
--
-- The grammar (the API validates it first; see README "Filters"):
--   {"field": value}                      $eq shorthand; an array value is $contains
--   {"field": {"$op": operand, ...}}      several operators on one field all apply
--   {"f1": ..., "f2": ...}                every condition applies
--   {"$and": [filter, ...]}, {"$or": [filter, ...]}, {"$not": filter}
--   $eq, $ne          the field's value equals / does not equal a scalar ($ne: missing counts as
--                     different); an array field is compared with $contains
--   $in, $nin         the value is / is not one of an array of scalars
--   $gt $gte $lt $lte numbers (and dates) compared by value
--   $exists           true: the field is present; false: it is not
--   $contains         an array field holds every given element (a single value: that element)
--   created_at, updated_at
--                     the chunk's document dates (chunks.document_created_at / document_updated_at),
--                     compared to ISO 8601 values; a value without a time zone is UTC.
-- SQLSTATE 22023 names an unknown operator, a malformed node or a value that is not a date.
-- Usage:   select * from search_filter('{"lang": "zh", "created_at": {"$gte": "2025-01-01"}}');
set search_path = public, extensions;

create or replace function public.search_filter(filter jsonb)
returns table (
    path jsonpath,
    vars jsonb,
    dates boolean,
    containment jsonb,
    created_from timestamptz,
    created_until timestamptz,
    updated_from timestamptz,
    updated_until timestamptz,
    residual boolean
)
language plpgsql
stable
set search_path = public, pg_temp
set timezone = 'UTC'  -- a date value without a zone is UTC, as in search_filter_epochs
as $$
declare
    compiled record;
    conjunct record;
    eq_keys text[] := '{}';
    eq_values jsonb[] := '{}';
    contains_keys text[] := '{}';
    contains_values jsonb[] := '{}';
    bound timestamptz;
    bound_residual boolean;
begin
    containment := '{}'::jsonb;
    residual := false;
    if filter is null or filter = '{}'::jsonb then
        vars := '{}'::jsonb;
        dates := false;
        return next;
        return;
    end if;
    select * into compiled from public.search_filter_path(filter);  -- validates the whole filter
    path := compiled.path::jsonpath;
    vars := compiled.vars;
    dates := compiled.dates;

    -- The top-level conjunction (nested $and flattened; $or and $not are left to the path), one row
    -- per field and operator. Linear: what the indexes can serve is collected, then merged once.
    for conjunct in
        with recursive conjunction(node) as (
            select filter
            union all
            select e.value
            from conjunction c, jsonb_each(c.node) kv,
                 jsonb_array_elements(case when kv.key = '$and' then kv.value end) e
        ), fields as (
            select kv.key, case
                       when jsonb_typeof(kv.value) = 'object' then kv.value
                       when jsonb_typeof(kv.value) = 'array' then jsonb_build_object('$contains', kv.value)
                       else jsonb_build_object('$eq', kv.value) end as spec
            from conjunction c, jsonb_each(c.node) kv
            where kv.key <> '$and'
        )
        select f.key, o.key as op, o.value as operand
        from fields f
        left join lateral jsonb_each(case when left(f.key, 1) <> '$' then f.spec end) o on true
    loop
        if left(conjunct.key, 1) = '$' then
            residual := true;  -- $or, $not
        elsif conjunct.key in ('created_at', 'updated_at')
              and conjunct.op in ('$eq', '$gt', '$gte', '$lt', '$lte')
              and jsonb_typeof(conjunct.operand) = 'string' then
            bound := (conjunct.operand #>> '{}')::timestamptz;  -- valid: search_filter_path checked it
            if conjunct.op in ('$eq', '$gt', '$gte') then
                bound := bound + case when conjunct.op = '$gt' then interval '1 microsecond' else interval '0' end;
                if conjunct.key = 'created_at' then created_from := greatest(created_from, bound);
                else updated_from := greatest(updated_from, bound); end if;
            end if;
            bound := (conjunct.operand #>> '{}')::timestamptz;
            if conjunct.op in ('$eq', '$lt', '$lte') then
                bound := bound - case when conjunct.op = '$lt' then interval '1 microsecond' else interval '0' end;
                if conjunct.key = 'created_at' then created_until := least(created_until, bound);
                else updated_until := least(updated_until, bound); end if;
            end if;
        elsif conjunct.op = '$eq' and jsonb_typeof(conjunct.operand) in ('string', 'number', 'boolean')
              and conjunct.key not in ('created_at', 'updated_at') then
            eq_keys := array_append(eq_keys, conjunct.key);
            eq_values := array_append(eq_values, conjunct.operand);
        elsif conjunct.op = '$contains' and conjunct.key not in ('created_at', 'updated_at') then
            contains_keys := array_append(contains_keys, conjunct.key);
            contains_values := array_append(contains_values, case when jsonb_typeof(conjunct.operand) = 'array'
                                                                  then conjunct.operand
                                                                  else jsonb_build_array(conjunct.operand) end);
        else
            residual := true;
        end if;
    end loop;

    -- containment: per field its $eq value, or every element its $contains conditions name. A field
    -- with two different $eq values, or with both kinds, keeps its first $eq value and leaves the rest
    -- to the path (residual): containment must only ever admit more than the filter.
    select coalesce(jsonb_object_agg(m.key, m.value), '{}'::jsonb), coalesce(bool_or(m.partial), false)
    into containment, bound_residual
    from (
        select e.key, (array_agg(e.value order by e.n))[1] as value,
               count(distinct e.value) > 1 or e.key = any(contains_keys) as partial
        from unnest(eq_keys, eq_values) with ordinality e(key, value, n)
        group by e.key
        union all
        -- an empty $contains still says "an array": the key stays, with no elements
        select c.key, coalesce(jsonb_agg(x.value order by c.n, x.i) filter (where x.i is not null), '[]'), false
        from unnest(contains_keys, contains_values) with ordinality c(key, value, n)
        left join lateral jsonb_array_elements(c.value) with ordinality x(value, i) on true
        where not c.key = any(eq_keys)
        group by c.key
    ) m;
    residual := residual or bound_residual;
    return next;
end;
$$;
