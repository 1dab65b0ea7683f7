'use strict';
// Canonical JSON (SPEC.md section 2.1) and the strict JSON parser, written from the spec.
//
// Value model (what the parser produces and the serializer accepts):
//   null, true, false      -> JS null / booleans
//   integers in +-(2^53-1)  -> JS numbers (always integral, never -0)
//   other integer tokens    -> BigInt (kept so that CJ-7 can reject them where they matter)
//   fractions / exponents   -> JFloat (kept so that CJ-6 can reject them, and so that a
//                              confidence number arrives as the number it was)
//   strings                 -> JS strings (possibly holding lone surrogates: CJ-8 checks)
//   arrays                  -> JS arrays
//   objects                 -> null-prototype objects (so "__proto__" and "constructor" are
//                              ordinary keys)

/** A rejection with a wire error class (SPEC.md section 18.4) and, where known, a requirement. */
class MemspecError extends Error {
  constructor(code, message, requirement) {
    super(message);
    this.code = code;
    this.requirement = requirement;
  }
}

const MAX_SAFE = 9007199254740991; // 2^53 - 1
const MAX_TEXT_BYTES = 64 * 1024 * 1024;
const MAX_DEPTH = 64;
const MAX_STRING_CODE_POINTS = 1048576;

/** A JSON number with a fraction or exponent (or the token -0): not canonical JSON. */
class JFloat {
  constructor(value, text) {
    this.value = value;
    this.text = text;
  }
}

function newObject() {
  return Object.create(null);
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof JFloat);
}

function has(obj, key) {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** A deep copy in the value model (objects stay null-prototype). */
function clone(v) {
  if (Array.isArray(v)) return v.map(clone);
  if (isObject(v)) {
    const out = newObject();
    for (const k of Object.keys(v)) out[k] = clone(v[k]);
    return out;
  }
  return v;
}

/** Build a null-prototype object from [key, value] pairs. */
function fromEntries(entries) {
  const out = newObject();
  for (const [k, v] of entries) out[k] = v;
  return out;
}

function isWellFormed(s) {
  if (typeof s.isWellFormed === 'function') return s.isWellFormed();
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

function codePointLength(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** Compare two well-formed strings code point by code point (CJ-2), not by UTF-16 unit. */
function compareCodePoints(a, b) {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i);
    const y = b.codePointAt(j);
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  if (i < a.length) return 1;
  if (j < b.length) return -1;
  return 0;
}

// ------------------------------------------------------------------ serialization

function canonicalError(message, requirement) {
  return new MemspecError('canonical', message, requirement);
}

function escapeString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c < 0x20) {
      if (c === 0x08) out += '\\b';
      else if (c === 0x0c) out += '\\f';
      else if (c === 0x0a) out += '\\n';
      else if (c === 0x0d) out += '\\r';
      else if (c === 0x09) out += '\\t';
      else out += '\\u00' + c.toString(16).padStart(2, '0');
    } else out += s[i];
  }
  return out + '"';
}

function writeCanonical(v, parts, path) {
  if (v === null) parts.push('null');
  else if (v === true) parts.push('true');
  else if (v === false) parts.push('false');
  else if (typeof v === 'number') {
    if (!Number.isInteger(v) || Object.is(v, -0)) {
      throw canonicalError(`${path || '/'}: ${v} is not an integer (floats are not canonical JSON)`, 'CJ-6');
    }
    if (Math.abs(v) > MAX_SAFE) throw canonicalError(`${path || '/'}: integer out of range`, 'CJ-7');
    parts.push(String(v));
  } else if (typeof v === 'bigint') {
    throw canonicalError(`${path || '/'}: integer ${v} is outside +-(2^53-1)`, 'CJ-7');
  } else if (v instanceof JFloat) {
    throw canonicalError(`${path || '/'}: ${v.text} is a floating-point number`, 'CJ-6');
  } else if (typeof v === 'string') {
    if (!isWellFormed(v)) throw canonicalError(`${path || '/'}: string holds a lone surrogate`, 'CJ-8');
    parts.push(escapeString(v.normalize('NFC')));
  } else if (Array.isArray(v)) {
    parts.push('[');
    v.forEach((item, i) => {
      if (i) parts.push(',');
      writeCanonical(item, parts, `${path}/${i}`);
    });
    parts.push(']');
  } else if (isObject(v)) {
    const keys = Object.keys(v);
    for (const k of keys) {
      if (!isWellFormed(k)) throw canonicalError(`${path || '/'}: a key holds a lone surrogate`, 'CJ-8');
      if (k.normalize('NFC') !== k) {
        throw canonicalError(`${path || '/'}: key ${JSON.stringify(k)} is not in NFC`, 'CJ-5');
      }
    }
    keys.sort(compareCodePoints);
    parts.push('{');
    keys.forEach((k, i) => {
      if (i) parts.push(',');
      parts.push(escapeString(k), ':');
      writeCanonical(v[k], parts, `${path}/${k}`);
    });
    parts.push('}');
  } else {
    throw canonicalError(`${path || '/'}: a ${typeof v} has no canonical JSON form`, 'CJ-1');
  }
}

/** The canonical bytes (a Buffer) of a value; MemspecError('canonical') when it has none. */
function canonicalBytes(v) {
  const parts = [];
  writeCanonical(v, parts, '');
  return Buffer.from(parts.join(''), 'utf8');
}

// ------------------------------------------------------------------ parsing

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * Parse JSON text. strict=true is the canonical reading (CJ-5..CJ-10): fractions, exponents,
 * -0, out-of-range integers, duplicate keys, lone surrogates and non-NFC keys are rejected
 * with `errorCode`. strict=false is the protocol reading: numbers are kept in the value model
 * (JFloat, BigInt) and lone surrogate escapes become lone surrogates, to be judged later by
 * whoever receives them; duplicate keys are still refused.
 */
function parseJSON(text, { strict = true, errorCode = 'canonical', maxDepth = MAX_DEPTH } = {}) {
  const fail = (msg, req) => {
    throw new MemspecError(errorCode, msg, req);
  };
  let i = 0;
  const n = text.length;

  const skip = () => {
    while (i < n && WS.has(text.charCodeAt(i))) i++;
  };

  const parseString = () => {
    // text[i] === '"'
    i++;
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        break;
      }
      if (c < 0x20) fail(`raw control character U+${c.toString(16).padStart(4, '0')} in a string`);
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('malformed \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          fail(`invalid escape \\${e === undefined ? '' : e}`);
      }
      start = i;
    }
    if (strict) {
      if (!isWellFormed(out)) fail('string holds a lone surrogate', 'CJ-8');
      if (codePointLength(out) > MAX_STRING_CODE_POINTS) {
        throw new MemspecError('limit', 'string longer than 1048576 code points');
      }
    }
    return out;
  };

  const parseNumber = () => {
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m || m[0] === '-' || m[0].length === 0) fail(`unexpected character at offset ${i}`);
    const token = m[0];
    i += token.length;
    const isFloat = /[.eE]/.test(token) || token === '-0';
    if (isFloat) {
      if (strict) fail(`number ${token} has a fraction, an exponent or is -0`, 'CJ-6');
      return new JFloat(Number(token), token);
    }
    const big = BigInt(token);
    if (big > BigInt(MAX_SAFE) || big < -BigInt(MAX_SAFE)) {
      if (strict) fail(`integer ${token} is outside +-(2^53-1)`, 'CJ-7');
      return big;
    }
    return Number(token);
  };

  const parseValue = (depth) => {
    skip();
    if (i >= n) fail('unexpected end of JSON text');
    const c = text[i];
    if (c === '{') {
      if (depth >= maxDepth) {
        if (strict) throw new MemspecError('limit', `more than ${maxDepth} nested levels`);
        fail(`more than ${maxDepth} nested levels`);
      }
      i++;
      const obj = newObject();
      skip();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        skip();
        if (text[i] !== '"') fail(`expected a string key at offset ${i}`);
        const key = parseString();
        if (has(obj, key)) fail(`duplicate key ${JSON.stringify(key)}`, 'CJ-9');
        if (strict && key.normalize('NFC') !== key) fail(`key ${JSON.stringify(key)} is not in NFC`, 'CJ-5');
        skip();
        if (text[i] !== ':') fail(`expected ':' at offset ${i}`);
        i++;
        obj[key] = parseValue(depth + 1);
        skip();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return obj;
        }
        fail(`expected ',' or '}' at offset ${i}`);
      }
    }
    if (c === '[') {
      if (depth >= maxDepth) {
        if (strict) throw new MemspecError('limit', `more than ${maxDepth} nested levels`);
        fail(`more than ${maxDepth} nested levels`);
      }
      i++;
      const arr = [];
      skip();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(parseValue(depth + 1));
        skip();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return arr;
        }
        fail(`expected ',' or ']' at offset ${i}`);
      }
    }
    if (c === '"') return parseString();
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    if (c === '-' || (c >= '0' && c <= '9')) return parseNumber();
    return fail(`unexpected character at offset ${i}`);
  };

  const value = parseValue(0);
  skip();
  if (i !== n) fail(`trailing data at offset ${i}`);
  return value;
}

/**
 * The `canonicalize` reading of JSON text that arrived as a string: its bytes are the UTF-8
 * encoding of the string, so a lone surrogate (no UTF-8 form) and a leading U+FEFF (a byte
 * order mark) are rejected (CJ-10), then the text is parsed strictly.
 */
function parseCanonicalText(text) {
  if (typeof text !== 'string') throw canonicalError('text must be a string');
  if (!isWellFormed(text)) throw canonicalError('text has no UTF-8 encoding (lone surrogate)', 'CJ-10');
  if (text.charCodeAt(0) === 0xfeff) throw canonicalError('text begins with a byte order mark', 'CJ-10');
  if (text.length > MAX_TEXT_BYTES || Buffer.byteLength(text, 'utf8') > MAX_TEXT_BYTES) {
    throw new MemspecError('limit', 'JSON text over 64 MiB');
  }
  return parseJSON(text, { strict: true });
}

// ------------------------------------------------------------------ protocol output

/** Protocol JSON (not canonical): ASCII only, so any string, lone surrogates included, survives. */
function encodeWire(v) {
  if (v === null || v === undefined) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof JFloat) return v.text;
  if (typeof v === 'string') {
    let out = '"';
    for (let i = 0; i < v.length; i++) {
      const c = v.charCodeAt(i);
      if (c === 0x22) out += '\\"';
      else if (c === 0x5c) out += '\\\\';
      else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
      else out += v[i];
    }
    return out + '"';
  }
  if (Array.isArray(v)) return '[' + v.map(encodeWire).join(',') + ']';
  return '{' + Object.keys(v).map((k) => encodeWire(k) + ':' + encodeWire(v[k])).join(',') + '}';
}

module.exports = {
  JFloat,
  MemspecError,
  MAX_SAFE,
  canonicalBytes,
  clone,
  codePointLength,
  compareCodePoints,
  encodeWire,
  fromEntries,
  has,
  isObject,
  isWellFormed,
  newObject,
  parseCanonicalText,
  parseJSON,
};
