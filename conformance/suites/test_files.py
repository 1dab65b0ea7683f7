"""Memory files: canonical export, byte-identical round trips and a verifying loader."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import (
    FORMAT_VERSION,
    SigningKey,
    birth_digest,
    canonical_json,
    sign_file,
    sign_record,
    verify_file,
)
from memspec.conformance import _builders as build
from memspec.conformance._builders import Keys
from memspec.conformance._driver import Driver
from memspec.conformance._machines import (
    attempt,
    describe_change,
    expect_rejected,
    snapshot,
)
from memspec.conformance._machines_observe import expect_refused
from memspec.conformance._outcomes import RequirementFailed, untestable_reason
from memspec.conformance._session import EngineSession
from memspec.data import tombstone


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (file-1, file-2, ...)."""
    return driver.configured(ref_prefix="file")


def _records(driver: Driver, key: SigningKey) -> list[dict[str, Any]]:
    """Versions of a varied set of records (signed, extended, multi-version), write order."""
    plain = driver.new("the kettle is in the left cupboard", tags=["kitchen"])
    signed = sign_record(driver.new("the spare key is under the blue pot"), key)
    extended = driver.new("Ünïcödé 🦉 extension test", slots={"é": [1, 2]},
                          extra={"x_vendor": {"kept": True, "n": 7}})
    moved = driver.new("standup starts at nine")
    return [plain, signed, extended, moved,
            build.evolve(moved, driver.clock.advance(seconds=1), tags=["revised"])]


def _export(driver: Driver, now: str, seed: SigningKey | None = None) -> dict[str, Any]:
    """The engine's export at ``now`` (signed with ``seed`` when given)."""
    args: dict[str, Any] = {"now": now}
    if seed is not None:
        args["seed_hex"] = seed.seed.hex()
    exported: dict[str, Any] = driver.engine.call("export", **args)["file"]
    return exported


def _latest(versions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for version in versions:
        latest[version["id"]] = version
    return latest


@pytest.mark.requirement("FILE-8")
def test_export_is_canonical_and_ordered(driver: Driver, engine: EngineSession, keys: Keys) -> None:
    versions = _records(driver, keys.b)
    now = driver.clock.advance(days=1)
    exports = []
    for order in (versions, versions[:-1][::-1] + versions[-1:]):
        engine.call("reset")
        for version in order:
            engine.call("put", record=version)
        exports.append(_export(driver, now))
    exported = exports[0]
    latest = _latest(versions)
    ids = [r["id"] for r in exported["records"]]
    assert ids == sorted(latest), (
        f"FILE-8: export lists {ids}, expected every record once in ascending id order"
    )
    for record in exported["records"]:
        assert canonical_json(record) == canonical_json(latest[record["id"]]), (
            f"FILE-8: export carries a version of {record['id']} that is not its latest"
        )
    assert exported["created_at"] == now, (
        f"FILE-8: the file's created_at is {exported['created_at']}, not the export time {now}"
    )
    assert exported["format"] == FORMAT_VERSION and exported["agent"] is None and \
        exported["signature"] == "", (
            "FILE-8: an unsigned export should carry format, agent null and signature ''"
        )
    assert canonical_json(exports[1]) == canonical_json(exported), (
        "FILE-8: the same store and time exported different bytes after a different insertion "
        "order"
    )
    verify_file(exported, require_signature=False)


@pytest.mark.requirement("FILE-8", "FILE-3")
def test_signed_export_verifies(driver: Driver, engine: EngineSession, keys: Keys) -> None:
    for version in _records(driver, keys.b):
        engine.call("put", record=version)
    exported = _export(driver, driver.clock.now(), keys.a)
    if exported["agent"] != keys.a.address:
        raise RequirementFailed(
            "FILE-3", f"a file signed with seed A names agent {exported['agent']}, not A's address")
    verify_file(exported, require_signature=True)


@pytest.mark.requirement("FILE-10")
def test_round_trip_is_byte_identical(driver: Driver, engine: EngineSession, keys: Keys) -> None:
    for version in _records(driver, keys.b):
        engine.call("put", record=version)
    now = driver.clock.advance(days=1)
    for seed, verify in ((None, False), (keys.a, True)):
        first = _export(driver, now, seed)
        engine.call("reset")
        engine.call("load", file=first, verify=verify)
        second = _export(driver, now, seed)
        assert canonical_json(second) == canonical_json(first), (
            f"FILE-10: export -> load into an empty store -> export at the same time is not "
            f"byte-identical ({'signed' if seed else 'unsigned'} file)"
        )


Load = tuple[str, dict[str, Any]]
"""A load the engine must refuse: what it is, and the load's arguments."""


def _unverifiable_files(driver: Driver, keys: Keys,
                        records: list[dict[str, Any]]) -> list[Load]:
    """Verifying loads of files without a valid file signature (FILE-5)."""
    unsigned = build.memory_file(records, created_at=driver.clock.now())
    signed = sign_file(unsigned, keys.a)
    stripped = {**signed, "signature": ""}
    tampered = {**signed, "records": [{**records[0], "tags": ["added-later"]}, *records[1:]]}
    wrong_agent = {**signed, "agent": keys.b.address}
    return [(f"a verifying load of {what}", {"file": memory_file, "verify": True})
            for what, memory_file in (("an unsigned file", unsigned),
                                      ("a file whose signature was stripped", stripped),
                                      ("a file changed after signing", tampered),
                                      ("a file re-attributed to another agent", wrong_agent))]


def _bad_record_signatures(driver: Driver, keys: Keys,
                           good: dict[str, Any]) -> list[Load]:
    """Verifying loads of signed files that hold one record whose signature fails (FILE-6)."""
    altered = {**sign_record(driver.new("the alarm code is private"), keys.b), "tags": ["x"]}
    reattributed = {**sign_record(driver.new("the safe is behind the painting"), keys.b),
                    "signed_by": keys.c.address}
    payload = {**driver.new("the vault opens at nine"), "signed_by": keys.b.address}
    payload.pop("signature")
    cross = {**payload, "signature": keys.b.sign("memory-file", payload)}
    return [(f"a verifying load of a signed file holding {what}",
             {"file": sign_file(build.memory_file([good, bad], created_at=driver.clock.now()),
                                keys.a), "verify": True})
            for what, bad in (("a record changed after signing", altered),
                              ("a record re-attributed to another signer", reattributed),
                              ("a record signed under the memory-file context", cross))]


def _other_signers(driver: Driver, keys: Keys,
                   records: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """Loads expecting agent A of files A did not sign (FILE-11), with the error class."""
    unsigned = build.memory_file(records, created_at=driver.clock.now())
    own = sign_file(unsigned, keys.a)
    # The substitution: the same content re-signed by someone else, who names themself.
    substituted = sign_file({**unsigned, "agent": None}, keys.b)
    expecting = f"a load expecting agent {keys.a.address} of"
    loads = [("signature", f"{expecting} {what}",
              {"file": memory_file, "verify": verify, "expected_agent": keys.a.address})
             for what, memory_file, verify in (
                 ("a file re-signed by another agent", substituted, True),
                 ("a file re-signed by another agent, verify false", substituted, False),
                 ("an unsigned file naming the expected agent",
                  {**unsigned, "agent": keys.a.address}, False),
                 ("an unsigned file", unsigned, True))]
    loads.append(("encoding", "a load whose expected_agent is not an address",
                  {"file": own, "verify": True, "expected_agent": "amp:key:0OIl"}))
    return loads


# The tests of FILE-5, FILE-6 and FILE-11 judge only whether a load is refused, with its
# class; whether a refused load wrote anything is PROTO-7's, judged on the same loads by
# test_a_refused_load_writes_nothing, so a load that is wrongly accepted fails the FILE
# requirement alone and never leaves PROTO-7 unjudged.


@pytest.mark.requirement("FILE-5")
def test_verifying_load_requires_a_file_signature(driver: Driver, engine: EngineSession,
                                                  keys: Keys) -> None:
    records = [driver.new("the kettle is in the left cupboard"), driver.new("tea before coffee")]
    unsigned = build.memory_file(records, created_at=driver.clock.now())
    for what, args in _unverifiable_files(driver, keys, records):
        expect_refused(engine, "load", "signature", "FILE-5", what, **args)
    engine.call("reset")  # what a refused load wrote is PROTO-7's, not this test's
    result, error = attempt(engine, "load", file=unsigned, verify=False)
    if error is not None:
        raise RequirementFailed(
            "FILE-5", f"the explicit opt-out did not load an unsigned file: {error}")
    if not (result is not None and sorted(result["loaded"]) == sorted(r["id"] for r in records)):
        raise RequirementFailed(
            "FILE-5", f"the opt-out load reported {result} instead of loading both records")
    stored = {r["id"] for r in engine.call("iterate")["records"]}
    if stored != {r["id"] for r in records}:
        raise RequirementFailed("FILE-5", "the opt-out load did not store records")


@pytest.mark.requirement("FILE-5")
def test_verification_is_decided_by_the_caller_not_the_file(driver: Driver, engine: EngineSession,
                                                            keys: Keys) -> None:
    records = [driver.new("the kettle is in the left cupboard")]
    unsigned = build.memory_file(records, created_at=driver.clock.now(),
                                 extra={"verify": False, "require_signature": False})
    expect_rejected(engine, "load", "signature", "FILE-5",
                    "a verifying load of an unsigned file that asks not to be verified",
                    file=unsigned, verify=True)


@pytest.mark.requirement("FILE-6")
def test_verifying_load_checks_every_signed_record(driver: Driver, engine: EngineSession,
                                                   keys: Keys) -> None:
    good = sign_record(driver.new("the spare key is under the blue pot"), keys.b)
    for what, args in _bad_record_signatures(driver, keys, good):
        expect_refused(engine, "load", "signature", "FILE-6", what, **args)
    engine.call("reset")  # what a refused load wrote is PROTO-7's, not this test's
    fine = sign_file(build.memory_file([good], created_at=driver.clock.now()), keys.a)
    result = engine.call("load", file=fine, verify=True)
    if result["loaded"] != [good["id"]]:
        raise RequirementFailed(
            "FILE-6", f"a file whose signatures all verify was not loaded: {result}")


@pytest.mark.requirement("FILE-11")
def test_a_loader_told_the_agent_refuses_any_other_signer(driver: Driver, engine: EngineSession,
                                                          keys: Keys) -> None:
    records = [driver.new("the kettle is in the left cupboard"), driver.new("tea before coffee")]
    for error_class, what, args in _other_signers(driver, keys, records):
        expect_refused(engine, "load", error_class, "FILE-11", what, **args)
    own = sign_file(build.memory_file(records, created_at=driver.clock.now()), keys.a)
    engine.call("reset")  # what a refused load wrote is PROTO-7's, not this test's
    result = engine.call("load", file=own, verify=True, expected_agent=keys.a.address)
    if result["loaded"] != [r["id"] for r in own["records"]]:
        raise RequirementFailed(
            "FILE-11", f"a file signed by the expected agent was not loaded: {result}")


@pytest.mark.requirement("PROTO-7")
@pytest.mark.profile("store")
def test_a_refused_load_writes_nothing(driver: Driver, engine: EngineSession, keys: Keys) -> None:
    """PROTO-7 on every load the FILE-5, FILE-6 and FILE-11 tests refuse: a load the engine
    rejects leaves the store as it was. A load the engine accepts meets PROTO-7 vacuously
    (nothing was rejected): accepting it is the FILE requirement's failure, not this one's.
    An engine without the files profile has no load to reject (SPEC 19.2): untestable.
    """
    if not engine.claims("files"):
        pytest.skip(untestable_reason("load is an operation of profile files, which the "
                                      "engine does not claim: there is no load whose "
                                      "rejection could write"))
    kept = driver.new("the umbrella hangs by the door", tags=["kept"])
    records = [driver.new("the kettle is in the left cupboard"), driver.new("tea before coffee")]
    good = sign_record(driver.new("the spare key is under the blue pot"), keys.b)
    loads = [*_unverifiable_files(driver, keys, records),
             *_bad_record_signatures(driver, keys, good),
             *((what, args) for _, what, args in _other_signers(driver, keys, records))]
    for what, args in loads:
        engine.call("reset")
        engine.call("put", record=kept)
        before = snapshot(engine)
        _, error = attempt(engine, "load", **args)
        if error is None:
            continue
        change = describe_change(before, snapshot(engine))
        if change:
            raise RequirementFailed("PROTO-7", f"{what} was rejected ({error.code}: "
                                    f"{error.message}) but load still wrote: {change}")


@pytest.mark.requirement("FILE-9")
def test_load_skips_existing_ids(driver: Driver, engine: EngineSession) -> None:
    kept = driver.new("the kettle is in the left cupboard", tags=["original"])
    engine.call("put", record=kept)
    newer = build.evolve(kept, driver.clock.advance(seconds=1), tags=["from-the-file"],
                         state="archived", state_reason="the file says so")
    arriving = [driver.new("tea before coffee"), driver.new("coffee after tea"),
                driver.new("water any time")]
    arriving.sort(key=lambda r: r["id"], reverse=True)
    before = snapshot(engine)
    result = engine.call("load", file=build.memory_file([arriving[0], newer, *arriving[1:]],
                                                        created_at=driver.clock.now()),
                         verify=False)
    assert result["skipped"] == [kept["id"]], (
        f"FILE-9: load should skip the id already in the store, reported skipped "
        f"{result['skipped']}"
    )
    assert result["loaded"] == [r["id"] for r in arriving], (
        f"FILE-9: load should load the new ids in file order, reported loaded {result['loaded']}"
    )
    assert snapshot(engine)[kept["id"]] == before[kept["id"]], (
        "FILE-9: load overwrote or appended to a record that was already in the store"
    )


@pytest.mark.requirement("FILE-10", "REC-2")
def test_extension_fields_survive_the_round_trip(
    driver: Driver, engine: EngineSession, keys: Keys
) -> None:
    extended = sign_record(driver.new("the lab fridge is for samples only",
                                      extra={"x_vendor": {"kept": [1, "two", None]},
                                             "zz_last": "tail"}), keys.b)
    header = build.memory_file([extended], created_at=driver.clock.now(),
                               extra={"x_producer": "the memspec kit"})
    engine.call("load", file=sign_file(header, keys.a), verify=True)
    stored = engine.call("get", id=extended["id"])["record"]
    if canonical_json(stored) != canonical_json(extended):
        raise RequirementFailed(
            "REC-2", "an extension field of a loaded record was dropped or changed")
    exported = _export(driver, driver.clock.now())
    if canonical_json(exported["records"][0]) != canonical_json(extended):
        raise RequirementFailed("REC-2", "an extension field did not survive export")


def _squatter(record: dict[str, Any], now: str) -> dict[str, Any]:
    """The tombstone anyone who knows ``record``'s id can write (the section 17 table)."""
    out = {**record, **tombstone().fixed_values(), "updated_at": now, "transition": None,
           "flagged": False, "flag_reason": None, "state_reason": "squat", "redacted": True,
           "redaction_reason": "squat", "birth_digest": birth_digest(record)}
    for name in tombstone().absent:
        out.pop(name, None)
    return out


@pytest.mark.requirement("FILE-12")
def test_a_tombstone_claims_no_free_id_but_from_the_expected_agent(
    driver: Driver, engine: EngineSession,
    keys: Keys) -> None:
    original = sign_record(driver.new("the vault code is with the notary"), keys.a)
    forged = _squatter(original, driver.clock.advance(seconds=1))
    decoy = driver.new("the notary opens at ten")
    attack = sign_file(build.memory_file([forged, decoy], created_at=driver.clock.now()), keys.b)
    for verify in (True, False):
        result = engine.call("load", file=attack, verify=verify)
        if forged["id"] not in result["skipped"] or forged["id"] in result["loaded"]:
            raise RequirementFailed("FILE-12", f"a tombstone from B's file claimed the free id "
                                    f"of A's record (verify={verify}): {result}")
    real = sign_file(build.memory_file([original], created_at=driver.clock.now()), keys.a)
    result = engine.call("load", file=real, verify=True, expected_agent=keys.a.address)
    if result["loaded"] != [original["id"]]:
        raise RequirementFailed("FILE-12", f"A's own record was not loaded after the "
                                f"squatting attempt: {result}")
    stored = engine.call("get", id=original["id"])["record"]
    if canonical_json(stored) != canonical_json(original):
        raise RequirementFailed("FILE-12", "the stored record is not A's signed original")
    engine.call("reset")
    own = sign_file(build.memory_file([forged], created_at=driver.clock.now()), keys.a)
    result = engine.call("load", file=own, verify=True, expected_agent=keys.a.address)
    if result["loaded"] != [forged["id"]]:
        raise RequirementFailed("FILE-12", f"A's own file, loaded with A as expected agent, "
                                f"lost its tombstone: {result}")


@pytest.mark.requirement("FILE-11")
def test_a_null_expected_agent_expects_no_one(
    driver: Driver, engine: EngineSession, keys: Keys
) -> None:
    plain = driver.new("the recycling goes out on tuesdays")
    signed_file = sign_file(build.memory_file(
        [driver.new("the compost goes out on fridays")], created_at=driver.clock.now()), keys.b)
    unsigned = build.memory_file([plain], created_at=driver.clock.now(), agent=keys.a.address)
    for what, memory_file, verify in (("an unsigned file", unsigned, False),
                                      ("a file signed by any agent", signed_file, True)):
        result, error = attempt(engine, "load", file=memory_file, verify=verify,
                                expected_agent=None)
        assert error is None and result is not None and result["loaded"], (
            f"FILE-11: load of {what} with expected_agent null was refused "
            f"({error.code + ': ' + error.message if error else result}); null means no "
            "agent is expected, the same as leaving the argument out"
        )
