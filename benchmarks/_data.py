"""Deterministic "typical" wire records for the benchmarks.

A typical record is what an agent's memory actually holds: a body of one or
two sentences (about a fifth of them with non-ASCII text: accented names,
CJK, an emoji), zero to three tags, a slot map in the reference engine's
``{subject phrase: value}`` shape for most facts, a provenance naming the
conversation it came from and often the writing agent, and evidence links
for rules. Every record is valid (its id is its content address), so the
same records feed canonicalization, validation, stores, recall and
consolidation. Generation depends only on the seed and the count.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memspec import FORMAT_VERSION, SigningKey, record_id, sign_file, sign_record

__all__ = [
    "SEED_HEX",
    "agent_records",
    "memory_file",
    "nfc_probe",
    "signed_records",
    "typical_records",
]

#: The Ed25519 seed every benchmark signs with (RFC 8032 test 1's secret key).
SEED_HEX = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"

_ADJECTIVES = (
    "staging", "production", "billing", "nightly", "shared", "legacy", "mobile", "internal",
    "primary", "backup", "quarterly", "weekly", "customer", "payments", "search", "analytics",
    "onboarding", "release", "support", "design", "marketing", "security", "travel", "home",
    "kitchen", "garden", "office", "team", "personal", "research", "Zürich", "São Paulo",
    "Kraków", "Malmö", "東京", "café", "naïve", "résumé", "Ελληνικό", "Reykjavík",
)
_NOUNS = (
    "database", "server", "dashboard", "pipeline", "calendar", "printer", "laptop", "budget",
    "report", "meeting", "roadmap", "deadline", "cluster", "inbox", "playlist", "recipe",
    "contract", "invoice", "password manager", "test suite", "build cache", "VPN", "router",
    "bike", "train ticket", "gym plan", "reading list", "flight", "hotel booking", "backlog",
    "API key rotation", "style guide", "on-call rota", "dentist appointment", "tax return",
    "release notes", "coffee order", "standup", "design review", "offsite",
)
_VALUES = (
    "Postgres 16", "MySQL 8", "SQLite", "weekly on Mondays", "every other Friday", "at 09:30",
    "dark mode", "light mode", "vim keybindings", "two-factor only", "in the blue folder",
    "€1,200 a month", "$450", "¥30,000", "port 5432", "port 8443", "us-east-1", "eu-west-3",
    "owned by Dana", "owned by Amélie", "owned by Ōta-san", "paused until March",
    "deprecated", "read-only", "retired", "green", "on track", "two weeks late", "oat milk",
    "no sugar", "window seat", "aisle seat", "Ubuntu 24.04", "macOS", "Python 3.11",
    "Rust nightly", "ten minutes", "48 hours", "the third floor", "Building C",
)
_PEOPLE = ("Dana", "Priya", "Marcus", "Sam", "Mateo", "Ngozi", "Ana", "Wei", "Tom", "Kofi",
           "Rachel", "Omar", "Ivy", "Lars", "Nadia", "Amélie", "Jörg", "Ōta-san")
_ACTIONS = (
    "ship the export first", "rotate the credentials", "move the meeting", "pin the version",
    "retry with backoff", "archive the old notes", "book the earlier slot", "split the report",
    "ask finance", "double-check the numbers", "write a runbook", "skip the daily sync",
    "use the staging copy", "cancel the trial", "renew before the deadline", "call back later",
)
_TAGS = ("work", "home", "ops", "travel", "finance", "health", "preferences", "people",
         "infra", "deadlines", "food", "reading", "meetings", "security", "family", "🚀")
_KINDS = ("conversation", "conversation", "conversation", "document", "tool-output",
          "observation", "user-correction")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


@dataclass(frozen=True)
class _Vocab:
    """The entity pool (subject phrases); it grows with the store so blocks stay realistic."""

    entities: tuple[str, ...]

    @classmethod
    def sized(cls, count: int) -> _Vocab:
        rng = random.Random(7)
        phrases = [f"{a} {n}" for a in _ADJECTIVES for n in _NOUNS]
        rng.shuffle(phrases)
        want = max(50, count // 4)
        if want > len(phrases):
            extra = [f"{a} {b} {n}" for a in _ADJECTIVES[:20] for b in _ADJECTIVES[20:]
                     for n in _NOUNS]
            rng.shuffle(extra)
            phrases += extra
        return cls(tuple(phrases[:want]))


def _timestamp(rng: random.Random, index: int) -> str:
    # Records arrive in time order over roughly two years, a few minutes apart.
    minutes = index * 7 + rng.randrange(7)
    day, rest = divmod(minutes, 24 * 60)
    year, day_of_year = divmod(day, 360)
    month, mday = divmod(day_of_year, 30)
    mday = min(mday, 27)  # every month has a 28th
    hour, minute = divmod(rest, 60)
    return (f"{2025 + year:04d}-{month + 1:02d}-{mday + 1:02d}T{hour:02d}:{minute:02d}:"
            f"{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z")


def _entity(rng: random.Random, vocab: _Vocab) -> str:
    # Zipf-like: a few entities come up all the time, most of them rarely.
    pool = vocab.entities
    if rng.random() < 0.05:
        return pool[min(len(pool), int(rng.paretovariate(1.2))) - 1]
    return pool[rng.randrange(len(pool))]


def _body(rng: random.Random, kind: str, entity: str, value: str) -> str:
    person = rng.choice(_PEOPLE)
    action = rng.choice(_ACTIONS)
    if kind == "fact":
        forms = (
            f"The {entity} is {value}.",
            f"{person} says the {entity} is {value}.",
            f"The {entity} is {value}. {person} confirmed it last {rng.choice(_MONTHS)}.",
            f"{person} prefers {value} for the {entity}.",
        )
        if rng.random() < 0.05:
            return f"The {entity} is not {value} any more."
        return forms[rng.randrange(len(forms))]
    if kind == "episode":
        return (f"On {rng.randrange(1, 29)} {rng.choice(_MONTHS)}, {person} asked about the "
                f"{entity} and we agreed to {action}.")
    if kind == "procedure":
        return (f"To {action} for the {entity}, open the runbook, check it is {value}, "
                f"then tell {person}.")
    return f"When the {entity} is {value}, always {action} and let {person} know."


def _record(rng: random.Random, index: int, vocab: _Vocab, agent: str,
            earlier: list[str]) -> dict[str, Any]:
    roll = rng.random()
    kind = ("fact" if roll < 0.5 else "episode" if roll < 0.8 else "procedure"
            if roll < 0.95 or not earlier else "rule")
    entity, value = _entity(rng, vocab), rng.choice(_VALUES)
    body = _body(rng, kind, entity, value)
    slots: dict[str, Any] = {}
    if kind == "fact" and " not " not in body and rng.random() < 0.8:
        slots[entity.lower()] = value.lower()
    elif kind == "procedure" and rng.random() < 0.5:
        slots[f"{entity.lower()} runbook"] = [f"open the {entity} runbook", f"check it is {value}"]
    created = _timestamp(rng, index)
    provenance = {"kind": rng.choice(_KINDS), "ref": f"session-{index // 40:05d}",
                  "agent": agent if rng.random() < 0.7 else None}
    birth = {"type": kind, "body": body, "slots": slots, "provenance": provenance,
             "created_at": created}
    tags = rng.sample(_TAGS, rng.choice((0, 1, 1, 2, 2, 3)))
    evidence = sorted(rng.sample(earlier[-200:], min(len(earlier), rng.randint(1, 3)))) \
        if kind == "rule" else []
    return {
        "id": record_id(birth), **birth, "state": "active",
        "confidence": f"{rng.randint(50, 100) / 100:.4f}", "updated_at": created,
        "evidence": evidence, "supersedes": None, "superseded_by": None, "transition": None,
        "state_reason": None, "tags": tags, "flagged": False, "flag_reason": None,
        "signed_by": None, "signature": "",
    }


def _iter_records(count: int, seed: int) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    vocab = _Vocab.sized(count)
    agent = SigningKey.from_hex(SEED_HEX).address
    earlier: list[str] = []
    seen: set[str] = set()
    index = 0
    while len(seen) < count:
        record = _record(rng, index, vocab, agent, earlier)
        index += 1
        if record["id"] in seen:
            continue
        seen.add(record["id"])
        earlier.append(record["id"])
        yield record


def typical_records(count: int, seed: int = 20260101) -> list[dict[str, Any]]:
    """``count`` distinct valid wire records, deterministic in ``seed``; unsigned."""
    return list(_iter_records(count, seed))


def signed_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records``, each signed by the benchmark key."""
    key = SigningKey.from_hex(SEED_HEX)
    return [sign_record(record, key) for record in records]


def memory_file(records: list[dict[str, Any]], *, signed: bool) -> dict[str, Any]:
    """A MemoryFile holding ``records`` (ascending id), signed by the benchmark key if asked."""
    body = {"format": FORMAT_VERSION, "agent": None, "created_at": "2027-01-01T00:00:00.000Z",
            "records": sorted(records, key=lambda r: r["id"]), "signature": ""}
    return sign_file(body, SigningKey.from_hex(SEED_HEX)) if signed else body


def nfc_probe() -> dict[str, Any]:
    """A record-shaped value whose strings are not in NFC (decomposed accents)."""
    return {"body": "Cafe\u0301 on the Zu\u0308rich office floor", "tags": ["re\u0301sume\u0301"],
            "slots": {"city": "Sa\u0303o Paulo"}, "n": 3}


_ATTRIBUTES = ("owner", "status", "location", "version", "deadline", "budget", "contact",
               "schedule", "password policy", "backup plan", "vendor", "priority")


def _agent_value(rng: random.Random) -> str:
    return f"{rng.choice(_VALUES)} {rng.randrange(1000)}"


def agent_records(count: int, seed: int = 20260202) -> list[dict[str, Any]]:
    """``count`` wire records shaped like one agent's memory after months of use.

    Mostly distinct facts, episodes and procedures about a Zipf-distributed set of
    entities (the pool grows with the count: a few come up all the time, most
    once or twice; each entity is a numbered name such as ``billing dashboard 17``
    so that entities are distinct words, not just distinct word pairs); a few
    clusters of near-duplicates (about 3% of records restate an earlier fact with
    different case, punctuation or articles, in clusters of 2-4); and a few
    contradictions (about 1% negate an earlier fact, about 1% give an earlier slot
    a new value). Deterministic in ``seed`` and ``count``; unsigned.
    """
    rng = random.Random(seed)
    pool = max(100, count // 3)
    agent = SigningKey.from_hex(SEED_HEX).address
    facts: list[tuple[str, str, str]] = []  # (entity, attribute, value) of plain facts
    used: dict[str, set[str]] = {}
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    index = 0
    while len(out) < count:
        index += 1
        entity_no = min(pool, int(rng.paretovariate(1.1))) - 1 if rng.random() < 0.1 \
            else rng.randrange(pool)
        entity = f"{_ADJECTIVES[entity_no % len(_ADJECTIVES)]} " \
                 f"{_NOUNS[(entity_no // len(_ADJECTIVES)) % len(_NOUNS)]} {entity_no}"
        roll = rng.random()
        slots: dict[str, Any] = {}
        kind = "fact"
        if roll < 0.03 and facts:
            entity, attribute, value = rng.choice(facts[-500:])
            body = rng.choice((f"the {attribute} of the {entity} is {value}",
                               f"The {attribute} of {entity} is {value}!",
                               f"THE {attribute.upper()} OF THE {entity.upper()} IS {value}."))
            slots = {f"{entity} {attribute}": value}
        elif roll < 0.04 and facts:
            entity, attribute, value = rng.choice(facts)
            body = f"The {attribute} of the {entity} is not {value} any more."
        elif roll < 0.05 and facts:
            entity, attribute, _ = rng.choice(facts)
            value = _agent_value(rng)
            body = f"The {attribute} of the {entity} is now {value}."
            slots = {f"{entity} {attribute}": value}
        elif roll < 0.55:
            attribute, value = rng.choice(_ATTRIBUTES), _agent_value(rng)
            taken = used.setdefault(entity, set())
            while attribute in taken:  # a new fact about a new aspect, not an update
                attribute = f"{rng.choice(_ATTRIBUTES)} {rng.randrange(100_000)}"
            taken.add(attribute)
            body = f"The {attribute} of the {entity} is {value}."
            slots = {f"{entity} {attribute}": value}
            facts.append((entity, attribute, value))
        elif roll < 0.85:
            kind = "episode"
            body = (f"On {rng.randrange(1, 29)} {rng.choice(_MONTHS)}, {rng.choice(_PEOPLE)} "
                    f"asked about the {entity} and we agreed to {rng.choice(_ACTIONS)}.")
        else:
            kind = "procedure"
            body = (f"To {rng.choice(_ACTIONS)} for the {entity}, open runbook "
                    f"{rng.randrange(10_000)} and tell {rng.choice(_PEOPLE)}.")
        created = _timestamp(rng, index)
        provenance = {"kind": rng.choice(_KINDS), "ref": f"session-{index // 40:05d}",
                      "agent": agent if rng.random() < 0.7 else None}
        birth = {"type": kind, "body": body, "slots": slots, "provenance": provenance,
                 "created_at": created}
        rid = record_id(birth)
        if rid in seen:
            continue
        seen.add(rid)
        out.append({
            "id": rid, **birth, "state": "active",
            "confidence": f"{rng.randint(50, 100) / 100:.4f}", "updated_at": created,
            "evidence": [], "supersedes": None, "superseded_by": None, "transition": None,
            "state_reason": None, "tags": rng.sample(_TAGS, rng.choice((0, 1, 1, 2))),
            "flagged": False, "flag_reason": None, "signed_by": None, "signature": "",
        })
    return out
