-- search_filter_path(node, vars) -> (vars, path, dates): one node of a search filter as jsonpath text
--
-- The recursive half of search_filter(), which documents the grammar. `vars` collects the filter's
-- values under generated names ($v1, $v2 ...): the path text holds only operators, those names and
-- field names quoted as jsonpath strings, never a value, so a filter cannot change what the path
-- means. `dates` is true when the node reads created_at or updated_at (the chunk's document dates,
-- which the target object carries as epoch seconds under "$created_at" / "$updated_at").
-- Raises SQLSTATE 22023 (invalid_parameter_value) naming what it does not understand.
set search_path = public, extensions;

create or replace function public.search_filter_path(node jsonb, inout vars jsonb, out path text, out dates boolean)
language plpgsql
stable
set search_path = public, pg_temp
as $$
declare
    parts text[] := '{}';
    key text;
    value jsonb;
    op text;
    operand jsonb;
    element jsonb;
    sub text[];
    child record;
    accessor text;
    is_date boolean;
    name text;
    leaf text;
    i integer;
begin
    dates := false;
    if node is null or jsonb_typeof(node) <> 'object' then
        raise exception 'a filter must be a JSON object, got %', coalesce(node::text, 'null')
            using errcode = '22023';
    end if;
    for key, value in select e.key, e.value from jsonb_each(node) e order by e.key loop
        if key in ('$and', '$or') then
            if jsonb_typeof(value) <> 'array' or jsonb_array_length(value) = 0 then
                raise exception 'filter %: expected a non-empty array of filters', key using errcode = '22023';
            end if;
            sub := '{}';
            for element in select jsonb_array_elements(value) loop
                select * into child from public.search_filter_path(element, vars);
                vars := child.vars;
                dates := dates or child.dates;
                sub := sub || ('(' || child.path || ')');
            end loop;
            parts := parts || ('(' || array_to_string(sub, case key when '$and' then ' && ' else ' || ' end) || ')');
        elsif key = '$not' then
            select * into child from public.search_filter_path(value, vars);
            vars := child.vars;
            dates := dates or child.dates;
            parts := parts || ('!(' || child.path || ')');
        elsif left(key, 1) = '$' then
            raise exception 'filter operator % is not supported here', key using errcode = '22023';
        else
            is_date := key in ('created_at', 'updated_at');
            dates := dates or is_date;
            -- to_jsonb(text)::text is a JSON string literal, which jsonpath reads as a quoted key.
            accessor := '$.' || to_jsonb(case when is_date then '$' || key else key end)::text;
            if jsonb_typeof(value) = 'object' then
                if value = '{}'::jsonb then
                    raise exception 'filter %: give an operator, e.g. {"$eq": ...}', key using errcode = '22023';
                end if;
            elsif jsonb_typeof(value) = 'array' then
                value := jsonb_build_object('$contains', value);  -- {"tags": ["a", "b"]}: holds both
            else
                value := jsonb_build_object('$eq', value);
            end if;
            for op, operand in select e.key, e.value from jsonb_each(value) e order by e.key loop
                if op in ('$in', '$nin', '$contains') and jsonb_typeof(operand) <> 'array' then
                    operand := case when op = '$contains' then jsonb_build_array(operand) else null end;
                    if operand is null then
                        raise exception 'filter %: % expects an array', key, op using errcode = '22023';
                    end if;
                end if;
                if op = '$exists' then
                    if jsonb_typeof(operand) <> 'boolean' then
                        raise exception 'filter %: $exists expects true or false', key using errcode = '22023';
                    end if;
                    parts := parts || (case when operand = 'true'::jsonb then 'exists(' else '!exists(' end
                                       || accessor || ')');
                    continue;
                end if;
                if is_date then
                    operand := public.search_filter_epochs(key, operand);
                end if;
                name := '$v' || (coalesce((select count(*) from jsonb_object_keys(vars)), 0) + 1);
                vars := vars || jsonb_build_object(substr(name, 2), operand);
                -- $eq / $in compare a single value: an array field needs $contains.
                leaf := case op
                    when '$eq' then '(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || ')'
                    when '$ne' then '!(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || ')'
                    when '$in' then '(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || '[*])'
                    when '$nin' then '!(' || accessor || '.type() != "array" && ' || accessor || ' == ' || name || '[*])'
                    when '$gt' then accessor || ' > ' || name
                    when '$gte' then accessor || ' >= ' || name
                    when '$lt' then accessor || ' < ' || name
                    when '$lte' then accessor || ' <= ' || name
                    when '$contains' then '(' || accessor || '.type() == "array"' end;
                if leaf is null then
                    raise exception 'filter %: operator % is not supported', key, op using errcode = '22023';
                end if;
                if op = '$contains' then
                    for i in 0 .. jsonb_array_length(operand) - 1 loop
                        leaf := leaf || ' && ' || accessor || ' == ' || name || '[' || i || ']';
                    end loop;
                    leaf := leaf || ')';
                end if;
                parts := parts || leaf;
            end loop;
        end if;
    end loop;
    if cardinality(parts) = 0 then
        raise exception 'a filter inside $and / $or / $not must not be empty' using errcode = '22023';
    end if;
    path := array_to_string(parts, ' && ');
end;
$$;
