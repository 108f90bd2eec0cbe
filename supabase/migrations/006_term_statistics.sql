-- 006: term statistics for the full-text leg: document frequency per lexeme and corpus size.
--
-- hybrid_search weights each query term by its inverse document frequency (BM25-style), so a rare
-- term ("尤金") counts for more than a common one ("地区"), and leaves very common terms out of the
-- GIN match on large corpora. Statement-level triggers with transition tables keep the counts exact
-- as chunks are inserted and deleted (COPY included); refresh_term_stats() rebuilds them from scratch.

set search_path = public, extensions;

create table if not exists public.term_stats (
    lexeme text primary key,
    ndoc bigint not null check (ndoc >= 0)
);
alter table public.term_stats enable row level security;
comment on table public.term_stats is 'Chunks containing each lexeme of chunks.fts (document frequency).';

create table if not exists public.corpus_stats (
    id boolean primary key default true check (id),
    nchunks bigint not null default 0,
    total_lexemes bigint not null default 0
);
alter table public.corpus_stats enable row level security;
comment on table public.corpus_stats is 'One row: chunk count and total distinct-lexeme count (for average length).';

create or replace function public.term_stats_after_insert()
returns trigger
language plpgsql
set search_path = public, pg_temp
as $$
begin
    -- Ordered upserts: concurrent ingests lock lexemes in the same order, so they wait, never deadlock.
    insert into public.term_stats as ts (lexeme, ndoc)
    select lexeme, count(*)
    from new_rows, unnest(tsvector_to_array(new_rows.fts)) as lexeme
    group by lexeme
    order by lexeme
    on conflict (lexeme) do update set ndoc = ts.ndoc + excluded.ndoc;
    insert into public.corpus_stats as cs (id, nchunks, total_lexemes)
    select true, count(*), coalesce(sum(length(fts)), 0) from new_rows
    on conflict (id) do update
        set nchunks = cs.nchunks + excluded.nchunks, total_lexemes = cs.total_lexemes + excluded.total_lexemes;
    return null;
end;
$$;

create or replace function public.term_stats_after_delete()
returns trigger
language plpgsql
set search_path = public, pg_temp
as $$
begin
    update public.term_stats ts
    set ndoc = greatest(ts.ndoc - gone.n, 0)
    from (
        select lexeme, count(*) as n
        from old_rows, unnest(tsvector_to_array(old_rows.fts)) as lexeme
        group by lexeme
        order by lexeme
    ) gone
    where ts.lexeme = gone.lexeme;
    update public.corpus_stats cs
    set nchunks = greatest(cs.nchunks - gone.n, 0), total_lexemes = greatest(cs.total_lexemes - gone.l, 0)
    from (select count(*) as n, coalesce(sum(length(fts)), 0) as l from old_rows) gone;
    return null;
end;
$$;

drop trigger if exists chunks_term_stats_insert on public.chunks;
create trigger chunks_term_stats_insert
    after insert on public.chunks
    referencing new table as new_rows
    for each statement execute function public.term_stats_after_insert();

drop trigger if exists chunks_term_stats_delete on public.chunks;
create trigger chunks_term_stats_delete
    after delete on public.chunks
    referencing old table as old_rows
    for each statement execute function public.term_stats_after_delete();

-- refresh_term_stats(): rebuild both tables from the chunks (after a TRUNCATE, or an UPDATE of
-- content_tokens, which the triggers do not follow). Takes a full scan; run it off-peak.
create or replace function public.refresh_term_stats()
returns void
language plpgsql
set search_path = public, pg_temp
as $$
begin
    lock table public.term_stats in exclusive mode;
    delete from public.term_stats;
    insert into public.term_stats (lexeme, ndoc) select word, ndoc from ts_stat('select fts from public.chunks');
    insert into public.corpus_stats as cs (id, nchunks, total_lexemes)
    select true, count(*), coalesce(sum(length(fts)), 0) from public.chunks
    on conflict (id) do update set nchunks = excluded.nchunks, total_lexemes = excluded.total_lexemes;
end;
$$;

select public.refresh_term_stats();
