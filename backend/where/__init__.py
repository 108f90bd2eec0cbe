"""The WhereBuilder (seed 004): the effective filter of a search - the caller's filters plus what the
question says about the documents (dates, tags, language, type), read by rules or by a model."""
