"""extensions.json: the extension fields of spec/EXTENSIONS.md as an old reader and a claiming
engine see them.

The validate_record, record_id, sign_record and verify_record groups hold for every engine,
extension-aware or not (XEXT-2, XEXT-3): memspec's core, which knows nothing of the
extensions, passes them (tests/test_vectors.py). The apply_proposal groups check the field
rules of engines that claim an extension profile (XEXP-1, XPROV-1, XFALS-1) and that a
lifecycle change carries every extension field into the new version.
"""

from __future__ import annotations

from typing import Any

from _vectorlib.fixtures import (
    KEY_A,
    T0,
    T1,
    T2,
    T3,
    case,
    edit,
    evolve,
    group,
    make,
    sign,
    vector_file,
)

NOW = T3
PLAIN = make("fact", "The on-call rota changes every Monday.", tags=("ops",))
SOURCE = make("fact", "The on-call rota lives in the ops wiki.", created_at=T0)
EVERY_FIELD = {
    "x_expires_at": "2026-03-01T00:00:00.000Z",
    "x_observed_at": T0,
    "x_derivation": {"hops": 1, "from": [SOURCE["id"]]},
    "x_falsifiable": {"tag": "paradigm", "condition": "the team stops rotating on-call"},
}
#: The same birth content with every extension field: same id (XEXT-2).
EXTENDED = make("fact", "The on-call rota changes every Monday.", tags=("ops",),
                extra=EVERY_FIELD)
SIGNED = sign(EXTENDED, KEY_A)


def _field_groups() -> list[dict[str, Any]]:
    return [
        group("extensions-validate", "An old reader accepts a record carrying every extension "
              "field, unchanged", "validate_record", "format", [
                  case("extensions/validate-every-field", "Every extension field of every "
                       "profile, carried unchanged", ["old-reader"], ["XEXT-3", "REC-2"],
                       {"record": EXTENDED}, expected={"record": EXTENDED}),
                  case("extensions/validate-signed-every-field", "The signed record with "
                       "every extension field", ["old-reader"], ["XEXT-3", "SIG-6"],
                       {"record": SIGNED}, expected={"record": SIGNED}),
              ]),
        group("extensions-record-id", "Extension fields are not birth content", "record_id",
              "format", [
                  case("extensions/id-ignores-extension-fields", "Adding every extension "
                       "field leaves the content address unchanged", ["old-reader"],
                       ["XEXT-2", "ID-1"], {"record": EXTENDED},
                       expected={"id": PLAIN["id"]}),
              ]),
        group("extensions-sign", "Extension fields are covered by the record signature",
              "sign_record", "signing", [
                  case("extensions/sign-every-field", "Signing a record with every extension "
                       "field (Ed25519 is deterministic)", ["old-reader"], ["XEXT-3", "REC-2"],
                       {"record": EXTENDED, "seed_hex": KEY_A.seed.hex()},
                       expected={"record": SIGNED}),
              ]),
        group("extensions-verify", "Tamper evidence: changing an extension field breaks the "
              "signature", "verify_record", "signing", [
                  case("extensions/verify-every-field", "The signed record verifies",
                       ["old-reader"], ["XEXT-3", "SIG-6"], {"record": SIGNED},
                       expected={"signed": True}),
                  case("extensions/verify-moved-expiry", "x_expires_at moved a year later",
                       ["old-reader", "tampered"], ["XEXT-3", "REC-2"],
                       {"record": edit(SIGNED, x_expires_at="2027-03-01T00:00:00.000Z")},
                       error="signature"),
                  case("extensions/verify-dropped-derivation", "x_derivation removed",
                       ["old-reader", "tampered"], ["XEXT-3", "REC-2"],
                       {"record": {k: v for k, v in SIGNED.items() if k != "x_derivation"}},
                       error="signature"),
                  case("extensions/verify-changed-observation", "x_observed_at changed after "
                       "signing", ["old-reader", "tampered"], ["XEXT-3", "REC-2"],
                       {"record": edit(SIGNED, x_observed_at=T1)}, error="signature"),
              ]),
    ]


def _prop(kind: str, record: dict[str, Any] | None = None, target_id: str | None = None,
          reason: str = "") -> dict[str, Any]:
    return {"kind": kind, "record": record, "target_id": target_id, "other_id": None,
            "reason": reason}


def _create(cid: str, comment: str, reqs: list[str], extra: dict[str, Any]) -> dict[str, Any]:
    record = make("fact", "The office closes at six.", created_at=T1, extra=extra)
    return case(f"extensions/{cid}", comment, ["claimed-profile"], reqs,
                {"proposal": _prop("create", record), "now": NOW}, setup=[], error="record")


def _proposal_groups() -> list[dict[str, Any]]:
    why = "The rota moved to the new tool."
    archived = evolve(EXTENDED, NOW, state="archived", state_reason=why)
    return [
        group("extensions-carry", "A lifecycle change carries every extension field",
              "apply_proposal", "lifecycle", [
                  case("extensions/archive-carries-fields", "Archiving keeps every extension "
                       "field in the new version", ["old-reader"], ["XEXT-3", "REC-2"],
                       {"proposal": _prop("archive", target_id=EXTENDED["id"], reason=why),
                        "now": NOW}, setup=[EXTENDED], expected={"written": [archived]}),
              ]),
        group("extensions-field-rules", "An engine claiming a profile rejects its malformed "
              "fields", "apply_proposal", "lifecycle", [
                  _create("expiry-not-a-timestamp", "x_expires_at spelled without "
                          "milliseconds", ["XEXP-1"], {"x_expires_at": "2026-03-01T00:00:00Z"}),
                  _create("expiry-null", "x_expires_at null (unset is absent)", ["XEXP-1"],
                          {"x_expires_at": None}),
                  _create("observed-before-birth", "x_observed_at earlier than created_at",
                          ["XPROV-1"], {"x_observed_at": T0}),
                  _create("derivation-hops-without-sources", "hops 1 and no sources",
                          ["XPROV-1"], {"x_derivation": {"hops": 1, "from": []}}),
                  _create("falsifiable-unknown-tag", "A tag outside the four", ["XFALS-1"],
                          {"x_falsifiable": {"tag": "seasonal", "condition": "winter"}}),
                  _create("falsifiable-blank-condition", "A condition that is not a reason",
                          ["XFALS-1"], {"x_falsifiable": {"tag": "temporal", "condition": ""}}),
              ]),
    ]


def build_all() -> dict[str, Any]:
    assert EXTENDED["id"] == PLAIN["id"] and T2 < NOW
    return vector_file(
        "extensions",
        "The extension fields of spec/EXTENSIONS.md: invisible to an old reader (validated, "
        "signed and verified as unknown fields, outside the content address), tamper-evident, "
        "carried through the lifecycle, and checked by engines that claim their profile.",
        {
            "old-reader": "Holds for every engine: the extension fields are unknown fields to "
                          "a reader that claims no extension profile.",
            "tampered": "An extension field was changed after signing.",
            "claimed-profile": "Holds for engines that claim the field's extension profile; "
                               "others report it not claimed.",
        },
        [*_field_groups(), *_proposal_groups()],
    )
