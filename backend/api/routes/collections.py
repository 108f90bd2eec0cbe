"""Team collections: create, list, rename, delete; members and their roles (issue 27)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, status

from backend.api.collection_schemas import (
    CollectionDetail,
    CollectionIn,
    CollectionList,
    CollectionOut,
    MemberIn,
    MemberOut,
)
from backend.api.deps import CurrentUser, ServicesDep
from backend.collections import service

router = APIRouter(prefix="/collections", tags=["collections"])


@router.post(
    "", response_model=CollectionOut, status_code=status.HTTP_201_CREATED, summary="Create a collection"
)
def create_collection(body: CollectionIn, services: ServicesDep, user: CurrentUser) -> CollectionOut:
    return CollectionOut(**service.create(services.db, identity=user, name=body.name))


@router.get("", response_model=CollectionList, summary="The collections you are a member of")
def list_collections(services: ServicesDep, user: CurrentUser) -> CollectionList:
    return CollectionList(items=[CollectionOut(**c) for c in service.list_all(services.db, identity=user)])


@router.get("/{collection_id}", response_model=CollectionDetail, summary="A collection with its members")
def get_collection(collection_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> CollectionDetail:
    found, members = service.get(services.db, identity=user, collection_id=collection_id)
    return CollectionDetail(**found, members=[MemberOut(**m) for m in members])


@router.patch("/{collection_id}", response_model=CollectionOut, summary="Rename a collection (admins)")
def rename_collection(
    collection_id: uuid.UUID, body: CollectionIn, services: ServicesDep, user: CurrentUser
) -> CollectionOut:
    return CollectionOut(
        **service.rename(services.db, identity=user, collection_id=collection_id, name=body.name)
    )


@router.delete(
    "/{collection_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a collection (its owner); its documents stay with their owners, private again",
)
def delete_collection(collection_id: uuid.UUID, services: ServicesDep, user: CurrentUser) -> None:
    service.delete(services.db, identity=user, collection_id=collection_id)


@router.put(
    "/{collection_id}/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Add a member with a role, or change their role (admins)",
)
def put_member(
    collection_id: uuid.UUID, user_id: uuid.UUID, body: MemberIn, services: ServicesDep, user: CurrentUser
) -> None:
    service.put_member(
        services.db, identity=user, collection_id=collection_id, user_id=user_id, role=body.role
    )


@router.delete(
    "/{collection_id}/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove a member (admins), or leave (yourself); effective at once",
)
def remove_member(
    collection_id: uuid.UUID, user_id: uuid.UUID, services: ServicesDep, user: CurrentUser
) -> None:
    service.remove_member(services.db, identity=user, collection_id=collection_id, user_id=user_id)
