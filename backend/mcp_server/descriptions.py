"""What the MCP server tells a model: when to call which tool and what comes back (read by the model that
chooses the tools, so written for it)."""

INSTRUCTIONS = """\
pgrag is a knowledge base of the user's documents (mostly Chinese, some English) with hybrid retrieval.
- Prefer `ask` for a question the documents should answer: it searches, writes a short answer citing [n]
  and returns those sources. Pass the conversation_id it returned to ask a follow-up.
- Use `search` when you want the passages themselves (to quote, compare or answer yourself).
- Use `research` only for a broad or compound question that needs a structured report (it takes tens of
  seconds to minutes and reports progress).
- `list_documents` shows what the knowledge base holds; `get_document` reads one document's full text.
Always keep the [n] citations and name the sources (title, external_id) when you pass an answer on."""

SEARCH = """\
Find the passages of the user's documents that best match a query (hybrid full-text + semantic search,
reranked; Chinese and English). Use it to see the evidence itself; use `ask` for a finished answer.
Returns {"results": [{rank, title, heading, external_id, document_id, chunk_id, score, snippet}], ...}
best first; score is in [0, 1] (relevance). snippet is the passage text (cut at 1200 characters: read the
whole document with get_document(document_id)). An empty list means nothing relevant was found."""

SEARCH_QUERY = "What to look for, as a question or keywords, in the documents' language (Chinese works best)."
SEARCH_TOP_K = (
    "At most this many passages (1-50). Unset: as many as are relevant (a dynamic cut, 5 at most by default)."
)
SEARCH_FILTERS = (
    'Metadata filter, e.g. {"tags": ["hr"]}, {"lang": "en"}, {"created_at": {"$gte": "2024-01-01"}}, '
    '{"source": "wiki"}. Only whitelisted keys; an unknown key is an error that names the allowed ones.'
)
SEARCH_COLLECTIONS = (
    "Search only these team collections (their ids); unset: everything the user may read. A collection "
    "the user is no member of is an error."
)
SEARCH_MODE = "hybrid (default), fulltext (exact words, names, codes) or vector (meaning only)."

ASK = """\
Answer a question from the user's documents: searches, then writes a short answer whose sentences cite
their evidence as [n]. Returns {"answer", "sources": [{n, title, heading, external_id, document_id,
chunk_id, snippet, cited}], "conversation_id", "message_id", "generator"}; sources[n-1] is [n]. When the
documents do not hold the answer, the answer says so (and lists related documents) instead of guessing.
The turn is stored in the user's conversation history like a chat turn: pass the returned
conversation_id with a follow-up question ("and the second one?") so it is understood in context."""

ASK_QUESTION = "The question, in the user's words (a follow-up may refer to the earlier turns)."
ASK_CONVERSATION = (
    "Continue this conversation (the conversation_id a previous ask returned); unset: a new one."
)

RESEARCH = """\
Deep research for a broad or compound question ("compare X and Y, and how does Z affect them?"): plans
up to four sections, searches each until its evidence suffices, and writes a Markdown report citing [n].
Slow (tens of seconds to minutes); sends progress notifications while it runs. Returns {"report",
"sections": [titles], "sources": [{n, title, external_id, document_id, chunk_id, snippet}], "partial",
"partial_reasons", "run_id", "conversation_id"}. partial=true: a budget ran out and the report covers
what was found. For a simple question use `ask` instead."""

RESEARCH_QUESTION = "The question to research, in the user's words."
RESEARCH_PRESET = "lite (default: faster, smaller budgets) or comprehensive (more searches and evidence)."

LIST_DOCUMENTS = """\
List the documents the user can read (their own and the shared corpus), most recently updated first:
{"items": [{document_id, title, external_id, source, visibility, metadata, chunk_count, created_at,
updated_at}], "total", "limit", "offset"}. Page with offset. Use it to see what the knowledge base holds;
use `search` to find something in it."""

LIST_LIMIT = "Documents per page (1-200)."
LIST_OFFSET = "How many to skip (for the next page: offset + limit)."

GET_DOCUMENT = """\
Read one document: its metadata and its text, rebuilt from its chunks in order. Long documents come in
pages: when "next_position" is not null, call again with from_position=next_position for the rest. Use
the document_id from search, ask or list_documents. A document the user may not read does not exist."""

GET_ID = "The document's id (document_id in search results, sources or list_documents)."
GET_FROM = "Start at this chunk position (0: the beginning; next_position of the previous page)."
GET_MAX_CHARS = "Stop after about this many characters of text (1000-100000)."
