"""Schema pages (tables from the JSON Schemas) and the raw schemas at their $id paths."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from _docgen._common import (
    GEN,
    RAW_SCHEMAS,
    SCHEMA_BASE,
    SCHEMAS_INDEX,
    DocgenError,
    IdLinker,
    cell,
    code,
    front,
    generated_note,
    indent,
    json_block,
    md_heading,
    read_json,
    rel,
    text,
)

_MAX_DEPTH = 4
_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_CONSTRAINTS = (
    ("minLength", "min length {}"), ("maxLength", "max length {}"), ("pattern", "pattern {}"),
    ("format", "format {}"), ("minimum", "≥ {}"), ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"), ("exclusiveMaximum", "< {}"), ("multipleOf", "multiple of {}"),
    ("minItems", "at least {} items"), ("maxItems", "at most {} items"),
    ("minProperties", "at least {} members"), ("maxProperties", "at most {} members"),
    ("default", "default {}"),
)


@dataclass(frozen=True)
class Schema:
    """One schema file: its $id path (``record``, ``vectors/records``) and document."""

    name: str
    path: Path
    document: dict[str, Any]

    @property
    def uri(self) -> str:
        return SCHEMA_BASE + self.name + ".json"

    @property
    def page(self) -> str:
        return f"{GEN}/schemas/{self.name}.md"

    @property
    def raw(self) -> str:
        return f"{RAW_SCHEMAS}/{self.name}.json"


def load_schemas(folder: Path) -> list[Schema]:
    """Every schema under ``folder``, named by its $id, sorted (top level first)."""
    found: list[Schema] = []
    for path in sorted(folder.rglob("*.json"), key=lambda p: (len(p.parts), p.as_posix())):
        if any(part.startswith((".", "_")) for part in path.relative_to(folder).parts):
            continue
        doc = read_json(path)
        uri = doc.get("$id") if isinstance(doc, dict) else None
        if not isinstance(uri, str) or not uri.startswith(SCHEMA_BASE) or not uri.endswith(
            ".json"
        ):
            raise DocgenError(f"{path}: $id must be {SCHEMA_BASE}<path>.json, not {uri!r}")
        name = uri[len(SCHEMA_BASE):-len(".json")]
        expected = path.relative_to(folder).with_suffix("").as_posix()
        if name != expected:
            raise DocgenError(f"{path}: $id {uri} does not match its file path ({expected})")
        found.append(Schema(name, path, doc))
    return found


class _Renderer:
    """Markdown for the parts of one schema, linking $refs to the other schema pages."""

    def __init__(self, schema: Schema, linker: IdLinker) -> None:
        self.schema = schema
        self.page = schema.page
        self.linker = linker

    def ref(self, target: str) -> str:
        uri = urljoin(self.schema.uri, target)
        base, _, fragment = uri.partition("#")
        if not base.startswith(SCHEMA_BASE):
            return code(target)
        name = base[len(SCHEMA_BASE):].removesuffix(".json")
        page = f"{GEN}/schemas/{name}.md"
        if fragment.startswith("/$defs/") and fragment.count("/") == 2:
            key = fragment[len("/$defs/"):]
            return f"[`{key}`]({rel(self.page, page + '#def-' + key)})"
        return f"[`{name}`]({rel(self.page, page)})"

    def type_of(self, node: Any) -> str:
        if node is True:
            return "any value"
        if node is False:
            return "not allowed"
        if not isinstance(node, dict):
            return code(json.dumps(node))
        parts: list[str] = []
        if "$ref" in node:
            parts.append(self.ref(str(node["$ref"])))
        if "const" in node:
            parts.append(code(json.dumps(node["const"], ensure_ascii=False)))
        if "enum" in node:
            parts.append("one of " + ", ".join(
                code(json.dumps(v, ensure_ascii=False)) for v in node["enum"]))
        kinds = node.get("type")
        names = kinds if isinstance(kinds, list) else [kinds] if kinds else []
        shown: list[str] = []
        for kind in names:
            if kind == "array" and "items" in node:
                shown.append(f"array of {self.type_of(node['items'])}")
            elif (kind == "object" and isinstance(node.get("additionalProperties"), dict)
                  and not node.get("properties")):
                shown.append(f"object of {self.type_of(node['additionalProperties'])}")
            else:
                shown.append(str(kind))
        if shown:
            parts.append(" or ".join(shown))
        if "anyOf" in node:
            parts.append(" or ".join(self.type_of(s) for s in node["anyOf"]))
        if "oneOf" in node:
            parts.append("exactly one of: " + "; ".join(self.type_of(s) for s in node["oneOf"]))
        if "allOf" in node and not any(isinstance(s, dict) and "if" in s for s in node["allOf"]):
            parts.append(" and ".join(self.type_of(s) for s in node["allOf"]))
        if not parts and "items" in node:
            parts.append(f"array of {self.type_of(node['items'])}")
        return " ".join(p for p in parts if p) or "any value"

    def constraints(self, node: Any) -> list[str]:
        if not isinstance(node, dict):
            return []
        out = []
        for key, template in _CONSTRAINTS:
            if key in node:
                value = node[key]
                shown = code(str(value)) if key in ("pattern", "format", "default") else value
                out.append(template.format(shown))
        if node.get("uniqueItems"):
            out.append("distinct items")
        if "not" in node:
            out.append(f"not {self.type_of(node['not'])}")
        return out

    def describe(self, node: Any) -> str:
        parts = []
        if isinstance(node, dict):
            if node.get("description"):
                parts.append(self.linker.text(str(node["description"]), self.page))
            elif node.get("$comment"):
                parts.append(self.linker.text(str(node["$comment"]), self.page))
        constraints = self.constraints(node)
        if constraints:
            parts.append("(" + "; ".join(constraints) + ")")
        return " ".join(parts)

    def rows(self, node: dict[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
        required = set(node.get("required", []))
        out = []
        for name, sub in node.get("properties", {}).items():
            path = f"{prefix}{name}"
            out.append(f"| {code(path)} | {cell(self.type_of(sub))} | "
                       f"{'yes' if name in required else ''} | {cell(self.describe(sub))} |")
            if depth < _MAX_DEPTH and isinstance(sub, dict):
                if sub.get("properties"):
                    out.extend(self.rows(sub, path + ".", depth + 1))
                items = sub.get("items")
                if isinstance(items, dict) and items.get("properties"):
                    out.extend(self.rows(items, path + "[].", depth + 1))
        extra = node.get("additionalProperties")
        if "additionalProperties" in node and node.get("properties"):
            label = ("not allowed" if extra is False
                     else self.type_of(extra) if isinstance(extra, dict) else "allowed")
            out.append(f"| *other members of {code(prefix[:-1]) if prefix else 'the object'}* "
                       f"| {cell(label)} | | |")
        return out

    def table(self, node: dict[str, Any]) -> list[str]:
        rows = self.rows(node)
        if not rows:
            return []
        return ["| member | type | required | description |", "|---|---|---|---|", *rows, ""]

    def rules(self, node: dict[str, Any]) -> list[str]:
        out = []
        for sub in node.get("allOf", []):
            if not isinstance(sub, dict):
                continue
            if sub.get("$comment"):
                out.append(f"- {self.linker.text(str(sub['$comment']), self.page)}")
            elif "$ref" in sub:
                out.append(f"- Also satisfies {self.ref(str(sub['$ref']))}.")
            else:
                out.append(f"- {code(json.dumps(sub, ensure_ascii=False, sort_keys=True))}")
        return out

    def section(self, node: Any) -> list[str]:
        """Description, type line, members table and rules of one (sub)schema."""
        out: list[str] = []
        if isinstance(node, dict) and node.get("description"):
            out.extend([self.linker.text(str(node["description"]), self.page), ""])
        type_line = self.type_of(node)
        constraints = self.constraints(node)
        out.append(f"**Type:** {type_line}" + (f" ({'; '.join(constraints)})"
                                               if constraints else ""))
        out.append("")
        if isinstance(node, dict):
            out.extend(self.table(node))
            rules = self.rules(node)
            if rules:
                out.extend(["**Rules:**", "", *rules, ""])
        return out


def _example_from_vectors(
    schema: Schema, vectors: list[tuple[str, dict[str, Any]]]
) -> tuple[str, str, Any] | None:
    """(vector file, vector id, value): the first valid vector argument this schema accepts."""
    from memspec._schemas import iter_errors

    if schema.name.startswith("vectors/") or not schema.document.get("required"):
        return None
    for stem, doc in vectors:
        for group in doc.get("groups", []):
            for case in group.get("tests", []):
                if case.get("result") != "valid":
                    continue
                for value in case.get("args", {}).values():
                    if isinstance(value, dict) and not iter_errors(value, schema.name):
                        return stem, str(case["id"]), value
    return None


def render_schema(
    schema: Schema, linker: IdLinker, vectors: list[tuple[str, dict[str, Any]]]
) -> str:
    """The page of one schema."""
    doc = schema.document
    r = _Renderer(schema, linker)
    page = schema.page
    title = str(doc.get("title") or schema.name)
    out = [front(f"{text(title)}", doc.get("description")),
           generated_note(f"`schemas/{schema.name}.json`"), ""]
    out.extend([
        f"- **`$id`:** `{schema.uri}`",
        f"- **download:** [{schema.name}.json]({rel(page, schema.raw)})",
        f"- **dialect:** `{doc.get('$schema', _DRAFT)}`",
        "",
    ])
    out.extend(r.section(doc))
    defs = doc.get("$defs", {})
    if defs:
        out.extend(["## Definitions", ""])
        for key, sub in defs.items():
            out.extend([md_heading(3, f"`{key}`", f"def-{key}"), ""])
            out.extend(r.section(sub))
    examples = list(doc.get("examples", []))
    out.extend(["## Examples", ""])
    if examples:
        for example in examples:
            out.extend([json_block(example), ""])
    else:
        found = _example_from_vectors(schema, vectors)
        if found:
            stem, vid, value = found
            out.extend([f"From the vector [{vid}]"
                        f"({rel(page, f'{GEN}/vectors/{stem}.md#{vid}')}):", "",
                        json_block(value), ""])
        else:
            out.extend(["This schema carries no examples.", ""])
    raw = schema.path.read_text(encoding="utf-8")
    out.extend([f'??? example "The raw schema: {schema.name}.json"',
                indent(json_block(json.loads(raw))), ""])
    return "\n".join(out)


def render_index(schemas: list[Schema], linker: IdLinker) -> str:
    """The schemas overview page."""
    page = SCHEMAS_INDEX
    out = [front("Schemas", "The JSON Schemas (draft 2020-12) of every memspec wire object."),
           generated_note("`schemas/`"), "",
           "Every wire object of fg-agent-memory/0.1 and of the memspec kit has a JSON Schema "
           "(draft 2020-12). Each schema is published at the URL of its `$id`, so a validator "
           "can fetch it, and the `memspec` distribution ships the same files for offline "
           "use. A schema checks shapes; rules that relate a value to others (such as a "
           "record's content address) are the specification's and `memspec.validate_record`'s.",
           ""]
    titles = {"": "Wire objects and the kit", "vectors": "Vectors files",
              "extensions": "Extension profiles"}
    order = list(titles)
    folders = sorted({s.name.rpartition("/")[0] for s in schemas},
                     key=lambda f: (order.index(f) if f in order else len(order), f))
    groups = [(titles.get(f, f"`{f}/`"), [s for s in schemas if s.name.rpartition("/")[0] == f])
              for f in folders]
    for heading, items in groups:
        if not items:
            continue
        out.extend([f"## {heading}", "", "| schema | title | `$id` | download |",
                    "|---|---|---|---|"])
        for s in items:
            out.append(f"| [{s.name}]({rel(page, s.page)}) | "
                       f"{text(str(s.document.get('title', '')))} | `{s.uri}` | "
                       f"[{s.name.rsplit('/', 1)[-1]}.json]({rel(page, s.raw)}) |")
        out.append("")
    return "\n".join(out)


def build(folder: Path, linker: IdLinker,
          vectors: list[tuple[str, dict[str, Any]]]) -> dict[str, bytes]:
    """Schema pages, the index, and the raw schemas at their $id paths."""
    schemas = load_schemas(folder)
    out: dict[str, bytes] = {SCHEMAS_INDEX: render_index(schemas, linker).encode()}
    for schema in schemas:
        out[schema.page] = render_schema(schema, linker, vectors).encode()
        out[schema.raw] = schema.path.read_bytes()
    return out
