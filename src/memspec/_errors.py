"""The typed error hierarchy shared by the wire format, the kit and engines.

Every error names an *error class* (``code``), the vocabulary the spec,
the vectors and the process protocol use to say what kind of failure was
expected or seen. ``pointer`` (an RFC 6901 JSON pointer into the offending
value) and ``requirement`` (a spec requirement id) are set where known.
"""

from __future__ import annotations

__all__ = [
    "ERROR_CLASSES",
    "CanonicalJSONError",
    "EncodingError",
    "EngineError",
    "FileError",
    "LifecycleError",
    "LimitError",
    "MemspecError",
    "NotFoundError",
    "ProposalError",
    "RecordError",
    "SignatureError",
    "StoreError",
    "UnsupportedError",
    "error_for_code",
]


class MemspecError(ValueError):
    """Base of every error memspec raises for bad input or a broken rule."""

    code = "error"

    def __init__(
        self,
        message: str,
        *,
        pointer: str | None = None,
        requirement: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.pointer = pointer
        self.requirement = requirement

    def __str__(self) -> str:
        where = f" at {self.pointer}" if self.pointer else ""
        req = f" [{self.requirement}]" if self.requirement else ""
        return f"{self.message}{where}{req}"

    def to_wire(self) -> dict[str, str]:
        """The protocol's error object for this error."""
        out = {"code": self.code, "message": str(self)}
        if self.requirement:
            out["requirement"] = self.requirement
        return out


class CanonicalJSONError(MemspecError):
    """A value or JSON text that canonical JSON cannot represent."""

    code = "canonical"


class LimitError(MemspecError):
    """An input over a configured size or depth limit, refused before parsing it."""

    code = "limit"


class EncodingError(MemspecError):
    """A malformed address, base58 / base64 spelling or timestamp."""

    code = "encoding"


class RecordError(MemspecError):
    """A MemoryRecord that breaks the record format."""

    code = "record"


class SignatureError(MemspecError):
    """A signature that is missing where required, malformed, or does not verify."""

    code = "signature"


class LifecycleError(MemspecError):
    """A state change the lifecycle machine does not allow."""

    code = "lifecycle"


class ProposalError(MemspecError):
    """A malformed proposal, or one outside its stage's authority."""

    code = "proposal"


class FileError(MemspecError):
    """A MemoryFile that breaks the file format."""

    code = "file"


class StoreError(MemspecError):
    """A store that cannot carry out an operation (corrupt, contended, closed)."""

    code = "store"


class NotFoundError(MemspecError):
    """An operation named a record id the store does not hold."""

    code = "not-found"


class UnsupportedError(MemspecError):
    """An operation the engine does not implement."""

    code = "unsupported"


class EngineError(MemspecError):
    """An error reported by an engine under test, carrying its wire error class."""

    def __init__(self, code: str, message: str, *, requirement: str | None = None) -> None:
        super().__init__(message, requirement=requirement)
        self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


_CLASSES: tuple[type[MemspecError], ...] = (
    CanonicalJSONError,
    LimitError,
    EncodingError,
    RecordError,
    SignatureError,
    LifecycleError,
    ProposalError,
    FileError,
    StoreError,
    NotFoundError,
    UnsupportedError,
)

#: Every error class name an engine may report, with the exception type for it.
ERROR_CLASSES: dict[str, type[MemspecError]] = {cls.code: cls for cls in _CLASSES}


def error_for_code(code: str, message: str) -> MemspecError:
    """Rebuild a typed error from its wire error class (unknown classes become EngineError)."""
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return EngineError(code, message)
    return cls(message)
