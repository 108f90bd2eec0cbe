"""GET /conversations and their messages, with sources exactly as stored (plus staleness)."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Query

from backend.api.deps import CurrentUser, ServicesDep
from backend.api.schemas import MAX_OFFSET, ConversationOut, MessageOut
from backend.chat.conversations import list_conversations, read_messages

router = APIRouter(prefix="/conversations", tags=["conversations"])


@router.get("", response_model=list[ConversationOut], summary="Conversations, most recent first")
def get_conversations(
    services: ServicesDep,
    user: CurrentUser,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> list[dict[str, Any]]:
    return list_conversations(services.db, identity=user, limit=limit, offset=offset)


@router.get(
    "/{conversation_id}/messages",
    response_model=list[MessageOut],
    summary="Messages with their stored sources; a source whose text changed is marked stale",
)
def get_messages(
    conversation_id: uuid.UUID, services: ServicesDep, user: CurrentUser
) -> list[dict[str, Any]]:
    return read_messages(services.db, conversation_id=conversation_id, identity=user)
