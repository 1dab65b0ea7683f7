"""Which one requirement each vector decides (SPEC 19.2, vectors/README.md).

A vector that lists several requirements exercises all of them, but a wrong answer to it
breaks one: for an invalid vector, the requirement whose rule the input breaks (the one that
makes it rejected with that error class); for a valid one, the requirement that fixes the
expected value. That one is the vector's ``decides``; the kit fails it alone when the case
goes wrong, and the case is inconclusive for the others.

A builder may set ``decides`` on a test itself; every other test that lists more than one
requirement gets it from :data:`BY_CASE` (by test id), else from :data:`BY_LIST` (by group id
and requirement list), and :func:`assign_decides` refuses a test that has neither, so a new
vector cannot list several requirements without saying which one it decides.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BY_CASE", "BY_LIST", "assign_decides"]

#: (group id, the test's requirements in order) -> the requirement it decides.
BY_LIST: dict[tuple[str, tuple[str, ...]], str] = {
    # addresses: the address form is ENC-1's, the base58 digits ENC-2's (BY_CASE), hex case
    # PROTO-9's.
    ("encode", ("ENC-1", "ENC-2")): "ENC-1",
    ("encode", ("ENC-1", "PROTO-9")): "PROTO-9",
    ("decode", ("ENC-1", "ENC-2")): "ENC-1",
    # canonical JSON: the published inputs come in another key order.
    ("published", ("CJ-2", "CJ-3", "CJ-4")): "CJ-2",
    ("accepted", ("CJ-2", "CJ-4")): "CJ-2",
    # A valid pair is one character, written raw: the output rule, not the rejection of
    # unpaired surrogates.
    ("accepted", ("CJ-4", "CJ-8")): "CJ-4",
    # A raw control character makes the text something other than a JSON value.
    ("rejected", ("CJ-1", "CJ-4")): "CJ-1",
    # consolidation: the report lists what the stage did; the stage is the case's point.
    ("consolidation-pass", ("CONS-3", "CONS-5")): "CONS-5",
    ("consolidation-pass", ("CONS-3", "CONS-11")): "CONS-11",
    # audit: the report's content decides; the digest (XAUD-4) is over that content.
    ("extension-operations-audit", ("XAUD-1", "XAUD-4")): "XAUD-1",
    ("extension-operations-audit", ("XAUD-2", "XAUD-4")): "XAUD-2",
    ("extension-operations-audit", ("XAUD-3", "XAUD-4")): "XAUD-3",
    ("extension-operations-recall", ("XTT-2", "XEXP-2")): "XTT-2",
    ("extension-operations-decay", ("XEXP-4", "XEXP-6")): "XEXP-4",
    # An expired record that a decay protection keeps: expiry archival is what yields.
    ("extension-operations-decay", ("XEXP-4", "DEC-5")): "XEXP-4",
    # Ingest and load apply a claimed extension's field rule (XEXT-4 names the class each
    # operation answers); the field rule itself is decided by validate_record's vectors.
    ("extension-operations-ingest", ("XEXT-4", "XEXP-1")): "XEXT-4",
    ("extension-operations-ingest", ("XEXT-4", "XPROV-1")): "XEXT-4",
    ("extension-operations-ingest", ("XEXT-4", "XFALS-1")): "XEXT-4",
    ("extension-operations-load", ("XEXT-4", "XEXP-1")): "XEXT-4",
    ("extension-operations-load", ("XEXT-4", "XPROV-1")): "XEXT-4",
    ("extension-operations-load", ("XEXT-4", "XFALS-1")): "XEXT-4",
    # extension fields read by a reader that claims no extension profile.
    ("extensions-validate", ("XEXT-3", "REC-2")): "XEXT-3",
    ("extensions-record-id", ("XEXT-2", "ID-1")): "XEXT-2",
    ("extensions-sign", ("XEXT-3", "REC-2")): "XEXT-3",
    ("extensions-verify", ("XEXT-3", "REC-2")): "XEXT-3",
    # A lifecycle change writes the record back: keeping its extension fields is REC-2's.
    ("extensions-carry", ("XEXT-3", "REC-2")): "REC-2",
    # files
    ("validate", ("CJ-6", "PROTO-8")): "CJ-6",
    ("verify", ("ROLL-1", "FILE-7")): "ROLL-1",
    ("load", ("FILE-12", "FILE-11")): "FILE-12",
    # legality: the table is LC-1's; archived being terminal is LC-2's.
    ("table", ("LC-1", "LC-3", "SUP-1", "SUP-2")): "LC-1",
    ("table", ("LC-1", "TRN-3", "TRN-4")): "LC-1",
    ("table", ("LC-1", "LC-3")): "LC-1",
    ("table", ("LC-1", "RES-1", "RES-2")): "LC-1",
    ("table", ("LC-1", "LC-2")): "LC-2",
    # lifecycle functions: the function's own rule; for a signed input, LC-6 (the point of
    # the case is the cleared signature).
    ("supersede", ("SUP-1", "SUP-2", "LC-3", "LC-5")): "SUP-2",
    ("supersede", ("SUP-2", "LC-6")): "LC-6",
    ("supersede", ("LC-1", "SUP-5")): "SUP-5",
    ("begin-transition", ("TRN-3", "LC-5")): "TRN-3",
    ("begin-transition", ("TRN-3", "LC-6")): "LC-6",
    ("begin-transition", ("TRN-4", "LC-1")): "TRN-4",
    ("begin-transition", ("TRN-4", "LC-2")): "TRN-4",
    ("resolve-transition", ("RES-1", "RES-2", "LC-5")): "RES-2",
    ("resolve-transition", ("RES-1", "RES-2")): "RES-2",
    ("resolve-transition", ("RES-1", "LC-3")): "RES-1",
    ("archive", ("LC-3", "LC-5")): "LC-5",
    ("archive", ("LC-3", "LC-4")): "LC-3",
    ("refresh-rule-flag", ("RULE-2", "RULE-6")): "RULE-2",
    ("refresh-rule-flag", ("RULE-2", "LC-6")): "LC-6",
    # proposals: the rule of the proposal's kind that the input breaks; OP-1 for a proposal
    # of no kind or no wire form; OP-2 (validated completely, against the record format and
    # the store) for an invalid successor or an unknown target; OP-3 (never completed) for a
    # missing reason that a lenient engine would fill in.
    ("accepted", ("SUP-1", "SUP-2", "LC-5")): "SUP-2",
    ("accepted", ("LC-3", "LC-4")): "LC-3",
    ("rejected", ("OP-2", "OP-3", "OP-1")): "OP-1",
    ("rejected", ("OP-2", "OP-3", "OP-1", "LC-4")): "OP-1",
    ("rejected", ("OP-2", "OP-3", "OP-6")): "OP-6",
    ("rejected", ("OP-2", "OP-3", "SUP-1")): "SUP-1",
    ("rejected", ("OP-2", "OP-3", "LC-3")): "LC-3",
    ("rejected", ("OP-2", "OP-3", "SUP-5")): "SUP-5",
    ("rejected", ("OP-2", "OP-3", "LC-2")): "LC-2",
    ("rejected", ("OP-2", "OP-3", "LC-1", "SUP-5")): "SUP-5",
    ("rejected", ("OP-2", "OP-3", "TRN-4")): "TRN-4",
    ("rejected", ("OP-2", "OP-3")): "OP-2",
    ("resolve", ("RES-1", "RES-2", "RES-3")): "RES-2",
    ("resolve", ("RES-1", "RES-2")): "RES-2",
    ("resolve", ("RES-1", "LC-3")): "RES-1",
    # recall
    ("recall-core", ("RCL-5", "RCL-11")): "RCL-5",
    # record ids: the id is ID-1's digest; a signed record's id is ID-3's (lifecycle and
    # signature fields leave it unchanged); a record missing a field is REC-1's.
    ("record-id", ("ID-1", "ID-3")): "ID-3",
    ("record-id", ("ID-1", "CJ-2")): "ID-1",
    ("record-id", ("ID-1", "CJ-4")): "ID-1",
    ("record-id", ("ID-1", "REC-1")): "REC-1",
    # records: the rule the case is about (SHOULD-level REC-13 never decides).
    ("valid", ("REC-1", "REC-13")): "REC-1",
    ("valid", ("REC-1", "RULE-1")): "RULE-1",
    ("valid", ("REC-1", "REC-4")): "REC-4",
    ("valid", ("REC-11", "REC-13")): "REC-11",
    ("valid", ("RULE-1", "REC-8")): "RULE-1",
    ("valid", ("SUP-2", "LC-3")): "LC-3",
    ("valid", ("TRN-1", "TRN-2")): "TRN-1",
    ("valid", ("SIG-6", "SIG-7")): "SIG-7",
    ("valid", ("REC-5", "REC-10")): "REC-5",
    ("invalid", ("CJ-6", "PROTO-8")): "CJ-6",
    ("create", ("REC-14", "REC-11")): "REC-14",
    ("create", ("REC-11", "REC-14")): "REC-11",
    ("create", ("REC-11", "ID-3")): "REC-11",
    # signatures
    ("derive-key", ("SIG-5", "PROTO-9")): "PROTO-9",
    # Re-signing a new version is the explicit signing SIG-9 leaves to the caller; the
    # MAY (SIG-10) never decides.
    ("sign-record", ("SIG-9", "SIG-10")): "SIG-9",
    ("verify-record", ("SIG-5", "SIG-7", "SIG-8")): "SIG-7",
    ("ed25519", ("SIG-3", "PROTO-9")): "PROTO-9",
    ("signing-input", ("SIG-1", "SIG-7", "FILE-3")): "SIG-1",
    ("signing-input", ("SIG-1", "SIG-2")): "SIG-1",
    ("canonical", ("ENC-4", "ENC-5")): "ENC-5",
    # A tombstone is accepted on the strength of its birth_digest.
    ("validate", ("RED-3", "RED-4", "RED-5")): "RED-5",
}

#: Test id -> the requirement it decides, where its group's rule does not fit it.
BY_CASE: dict[str, str] = {
    # Leading zero bytes are ENC-2's rule.
    **{f"addresses/{side}-{name}": "ENC-2"
       for side in ("encode", "decode")
       for name in ("all-zero", "one-leading-zero", "two-leading-zeros")},
    # Characters outside the alphabet, and leading '1's whose count gives the wrong length,
    # are ENC-2's decoding rules; the prefix, whitespace, emptiness and the length of the
    # decoded key are ENC-1's form.
    **{f"addresses/reject-{name}": "ENC-2"
       for name in ("char-zero", "char-capital-o", "char-capital-i", "char-lowercase-l",
                    "char-plus", "inner-space", "extra-leading-one", "missing-leading-one",
                    "33-ones")},
    # A transition without a reason, which a lenient engine would complete.
    "proposals/transition-missing-reason": "OP-3",
    "proposals/transition-ascii-whitespace-reason": "OP-3",
    # An unsigned record verifies as unsigned: SIG-8 (never treated as validly signed).
    "signatures/verify-published-unsigned": "SIG-8",
    "signatures/verify-evolved-unsigned": "SIG-8",
}


def assign_decides(group: dict[str, Any]) -> None:
    """Set ``decides`` on every test of ``group`` that lists several requirements, right
    after its ``requirements`` member; AssertionError for a test with no entry, or one whose
    ``decides`` is not among its requirements."""
    for index, test in enumerate(group["tests"]):
        listed = tuple(test["requirements"])
        decides = test.get("decides")
        if len(listed) < 2:
            assert decides is None or listed == (decides,), (
                f"{test['id']} decides {decides} but lists {listed}")
            test.pop("decides", None)
            continue
        if decides is None:
            decides = BY_CASE.get(test["id"]) or BY_LIST.get((group["id"], listed))
        assert decides is not None, (
            f"{test['id']} lists {', '.join(listed)} but says which one it decides nowhere: "
            "set decides in its builder or add it to tools/_vectorlib/decides.py")
        assert decides in listed, f"{test['id']} decides {decides}, which it does not list"
        ordered: dict[str, Any] = {}
        for key, value in test.items():
            if key != "decides":
                ordered[key] = value
            if key == "requirements":
                ordered["decides"] = decides
        group["tests"][index] = ordered
