"""Extension x-audit: a content-addressed audit report of the store (spec/EXTENSIONS.md X7)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pytest

from memspec._canonical import canonical_json
from memspec.conformance import _builders as build
from memspec.conformance._driver import Driver
from memspec.conformance._session import EngineSession

SOURCED = {"kind": "observation", "ref": "audit-1", "agent": None}
SECRET = "the locker combination is 31-7-19"


@dataclass(frozen=True)
class Story:
    """A store with a supersession, an archival and a redaction."""

    old: dict[str, Any]
    secret: dict[str, Any]
    gone: dict[str, Any]
    new: dict[str, Any]
    #: The supersession; the archival; the redaction.
    t1: str
    t2: str
    t3: str


@pytest.fixture
def story(driver: Driver) -> Story:
    """The story, written into the store through ``driver``."""
    clock = driver.clock
    old = build.record("fact", "the badge office is in room 3", created_at=clock.now(),
                       provenance=SOURCED, tags=["badge"])
    secret = build.record("fact", SECRET, created_at=clock.now(), provenance=SOURCED,
                          slots={"combination": "31-7-19"}, tags=["locker-secret"])
    gone = build.record("episode", "the fire drill happened", created_at=clock.now(),
                        provenance=SOURCED)
    for record in (old, secret, gone):
        driver.engine.call("put", record=record)
    t1 = clock.advance(days=1)
    new = build.record("fact", "the badge office is in room 5", created_at=t1,
                       provenance=SOURCED, supersedes=old["id"])
    driver.apply(build.proposal("supersede", new, target_id=old["id"],
                                reason="the office moved"), now=t1)
    t2 = clock.advance(days=1)
    driver.archive(gone["id"], "drills are not worth keeping", now=t2)
    t3 = clock.advance(days=1)
    driver.redact(secret["id"], "a secret was stored", now=t3)
    return Story(old, secret, gone, new, t1, t2, t3)


@pytest.mark.requirement("XAUD-1")
def test_every_record_with_every_version(story: Story, engine: EngineSession) -> None:
    report = engine.call("audit")["report"]
    ids = [r["id"] for r in report["records"]]
    stored = [r["id"] for r in engine.call("iterate")["records"]]
    assert ids == sorted(stored), f"XAUD-1: the report lists {ids}, the store holds {stored}"
    for entry in report["records"]:
        history = engine.call("history", id=entry["id"])["records"]
        wanted = [{"updated_at": v["updated_at"], "state": v["state"],
                   "state_reason": v["state_reason"]} for v in history]
        assert entry["versions"] == wanted, (
            f"XAUD-1: the versions of {entry['id']} are {entry['versions']}, history says "
            f"{wanted}")
        assert entry["type"] == history[-1]["type"]
        assert entry["redacted"] is (entry["id"] == story.secret["id"]), (
            f"XAUD-1: {entry['id']} has redacted={entry['redacted']}")


@pytest.mark.requirement("XAUD-2")
def test_the_supersession_changelog(story: Story, engine: EngineSession) -> None:
    report = engine.call("audit")["report"]
    assert report["supersessions"] == [{"id": story.old["id"], "successor": story.new["id"],
                                        "at": story.t1, "reason": "the office moved"}], (
        f"XAUD-2: supersessions are {report['supersessions']}")


@pytest.mark.requirement("XAUD-3")
def test_redactions_say_that_and_why_never_what(story: Story, engine: EngineSession) -> None:
    result = engine.call("audit")
    report = result["report"]
    assert report["redactions"] == [{"id": story.secret["id"], "at": story.t3,
                                     "reason": "a secret was stored"}], (
        f"XAUD-3: redactions are {report['redactions']}")
    text = canonical_json(result).decode("utf-8")
    for leak in (SECRET, "31-7-19", "locker-secret", "the badge office is in room"):
        assert leak not in text, f"XAUD-3: the audit report contains record content {leak!r}"


@pytest.mark.requirement("XAUD-4")
def test_the_report_is_content_addressed_and_reproducible(
    story: Story, engine: EngineSession
) -> None:
    first, second = engine.call("audit"), engine.call("audit")
    assert first == second, "XAUD-4: two audits of the same store differ"
    digest = "sha256:" + hashlib.sha256(canonical_json(first["report"])).hexdigest()
    assert first["digest"] == digest, (
        f"XAUD-4: digest {first['digest']} is not the SHA-256 of the report's canonical JSON "
        f"({digest})")
