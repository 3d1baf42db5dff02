"""The model reply cache: a reply is reused when prompt id, prompt version, model and input digest match."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .schema import llm_cache


@dataclass(frozen=True, slots=True)
class CacheKey:
    """What a cached reply depends on."""

    prompt_id: str
    prompt_version: int
    model: str
    input_sha: str

    def where(self):
        c = llm_cache.c
        return sa.and_(c.prompt_id == self.prompt_id, c.prompt_version == self.prompt_version,
                       c.model == self.model, c.input_sha == self.input_sha)


@dataclass(frozen=True, slots=True)
class Cached:
    """A stored reply and what it cost when it was made."""

    reply: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int


def get(engine: Engine, key: CacheKey) -> Cached | None:
    """The cached reply for `key`, or None."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(llm_cache).where(key.where())).first()
    return None if row is None else Cached(dict(row.reply), row.prompt_tokens, row.completion_tokens)


def put(engine: Engine, key: CacheKey, reply: dict[str, Any], prompt_tokens: int, completion_tokens: int) -> None:
    """Store (or replace) the reply for `key`."""
    values = {"prompt_id": key.prompt_id, "prompt_version": key.prompt_version, "model": key.model,
              "input_sha": key.input_sha, "reply": reply, "prompt_tokens": prompt_tokens,
              "completion_tokens": completion_tokens, "created_at": datetime.now(UTC).replace(tzinfo=None)}
    with engine.begin() as conn:
        conn.execute(llm_cache.delete().where(key.where()))
        conn.execute(llm_cache.insert().values(**values))


def get_many(engine: Engine, keys: list[CacheKey]) -> dict[CacheKey, Cached]:
    """The cached replies among `keys`, in one query per prompt/model and chunk (a run asks for hundreds)."""
    found: dict[CacheKey, Cached] = {}
    groups: dict[tuple[str, int, str], list[str]] = {}
    for key in keys:
        groups.setdefault((key.prompt_id, key.prompt_version, key.model), []).append(key.input_sha)
    c = llm_cache.c
    with engine.connect() as conn:
        for (pid, version, model), shas in groups.items():
            for i in range(0, len(shas), 500):
                query = sa.select(llm_cache).where(c.prompt_id == pid, c.prompt_version == version, c.model == model,
                                                   c.input_sha.in_(shas[i:i + 500]))
                for row in conn.execute(query):
                    found[CacheKey(pid, version, model, row.input_sha)] = Cached(
                        dict(row.reply), row.prompt_tokens, row.completion_tokens)
    return found


def put_many(engine: Engine, entries: list[tuple[CacheKey, Cached]]) -> None:
    """Store many new replies in one transaction."""
    if not entries:
        return
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = [{"prompt_id": k.prompt_id, "prompt_version": k.prompt_version, "model": k.model,
             "input_sha": k.input_sha, "reply": v.reply, "prompt_tokens": v.prompt_tokens,
             "completion_tokens": v.completion_tokens, "created_at": now} for k, v in entries]
    try:
        with engine.begin() as conn:
            conn.execute(llm_cache.insert(), rows)
    except sa.exc.IntegrityError:  # another run stored some of them meanwhile: replace one by one
        for k, v in entries:
            put(engine, k, v.reply, v.prompt_tokens, v.completion_tokens)
