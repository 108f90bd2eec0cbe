-- 022: conversations an OpenAI-compatible client continues (issue 28, item 1).
--
-- A chat-completions client keeps no conversation id: it resends the whole history with every turn.
-- pgrag keeps each client conversation as one of its own conversations (listed with the others, its
-- sources stored like /chat's) and finds it again by the history the client sends: client_key is the
-- sha256 of the turns the client saw last (its user and assistant messages, whitespace-normalised,
-- the reply as pgrag sent it). The next request whose earlier turns hash to it continues that
-- conversation; one that does not (a new chat, an edited or regenerated turn) starts a new one,
-- seeded with the history the client sent. Null for conversations made by /chat and /research.

set search_path = public, extensions;

alter table public.conversations add column if not exists client_key text;
comment on column public.conversations.client_key is
    'OpenAI-compatible clients: sha256 of the history the client last saw (backend/services/openai_compat.py); '
    'the next turn that resends it continues this conversation.';
create index if not exists conversations_client_key_idx on public.conversations (owner_id, client_key)
    where client_key is not null;
