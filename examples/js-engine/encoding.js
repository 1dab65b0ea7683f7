'use strict';
// Encodings (SPEC.md sections 2.3-2.5 and 6): hexadecimal, base58 and amp:key: addresses,
// the one base64 signature spelling, canonical timestamps and wire confidence.

const { JFloat, MemspecError } = require('./canonical');

function encodingError(message, requirement) {
  return new MemspecError('encoding', message, requirement);
}

// ------------------------------------------------------------------ hexadecimal

/** Bytes of a hexadecimal argument (digits in either case); class encoding otherwise. */
function hexToBytes(value, what = 'hexadecimal argument') {
  if (typeof value !== 'string' || value.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(value)) {
    throw encodingError(`${what} is not an even number of hexadecimal digits`);
  }
  return Buffer.from(value, 'hex');
}

// ------------------------------------------------------------------ base58 and addresses

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const B58_INDEX = new Map([...B58].map((ch, i) => [ch, BigInt(i)]));
const ADDRESS_PREFIX = 'amp:key:';

function b58encode(bytes) {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let digits = '';
  while (n > 0n) {
    digits = B58[Number(n % 58n)] + digits;
    n /= 58n;
  }
  return '1'.repeat(zeros) + digits;
}

function b58decode(text) {
  let zeros = 0;
  while (zeros < text.length && text[zeros] === '1') zeros++;
  let n = 0n;
  for (const ch of text) {
    const d = B58_INDEX.get(ch);
    if (d === undefined) throw encodingError(`${JSON.stringify(ch)} is not a base58 character`, 'ENC-2');
    n = n * 58n + d;
  }
  const body = [];
  while (n > 0n) {
    body.unshift(Number(n & 0xffn));
    n >>= 8n;
  }
  return Buffer.from([...new Array(zeros).fill(0), ...body]);
}

function addressFromPublicKey(key) {
  if (key.length !== 32) throw encodingError(`a public key is 32 bytes, not ${key.length}`, 'ENC-1');
  return ADDRESS_PREFIX + b58encode(key);
}

function publicKeyFromAddress(address) {
  if (typeof address !== 'string') throw encodingError('an address is a string', 'ENC-1');
  if (!address.startsWith(ADDRESS_PREFIX)) throw encodingError('an address begins with amp:key:', 'ENC-1');
  const rest = address.slice(ADDRESS_PREFIX.length);
  if (rest.length === 0) throw encodingError('the address has no key part', 'ENC-1');
  const key = b58decode(rest);
  if (key.length !== 32) throw encodingError(`the address names ${key.length} bytes, not 32`, 'ENC-1');
  return key;
}

function isAddress(value) {
  try {
    publicKeyFromAddress(value);
    return true;
  } catch (e) {
    return false;
  }
}

// ------------------------------------------------------------------ signature spelling

const SIGNATURE_SPELLING = /^[A-Za-z0-9+/]{85}[AQgw]==$/;

/** The 64 bytes of a signature in its one canonical base64 spelling (ENC-3). */
function decodeSignature(value) {
  if (typeof value !== 'string' || !SIGNATURE_SPELLING.test(value)) {
    throw encodingError('a signature is 88 characters of padded standard base64 (64 bytes)', 'ENC-3');
  }
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== 64 || bytes.toString('base64') !== value) {
    throw encodingError('the signature is not the canonical base64 of 64 bytes', 'ENC-3');
  }
  return bytes;
}

function encodeSignature(bytes) {
  return Buffer.from(bytes).toString('base64');
}

// ------------------------------------------------------------------ timestamps

const CANONICAL_TS = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z$/;
const RFC3339 =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))$/;

function isLeap(y) {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function daysInMonth(y, m) {
  return [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];
}

function realInstant(y, mo, d, h, mi, s) {
  return y >= 1 && y <= 9999 && mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth(y, mo) &&
    h <= 23 && mi <= 59 && s <= 59;
}

// Days since 1970-01-01 of a proleptic Gregorian date, and back (civil-calendar arithmetic
// done by hand: JS Date maps years 0-99 to the 1900s).
function daysFromCivil(y, m, d) {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(z) {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  return [era * 400 + yoe + (m <= 2 ? 1 : 0), m, d];
}

function pad(n, width) {
  return String(n).padStart(width, '0');
}

/** Whether a value is a canonical timestamp naming a real instant (ENC-4). */
function isCanonicalTimestamp(value) {
  if (typeof value !== 'string') return false;
  const m = CANONICAL_TS.exec(value);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  return realInstant(y, mo, d, h, mi, s);
}

function checkTimestamp(value, what = 'timestamp') {
  if (!isCanonicalTimestamp(value)) {
    throw encodingError(`${what} is not a canonical timestamp YYYY-MM-DDTHH:MM:SS.mmmZ`, 'ENC-4');
  }
  return value;
}

/** The canonical spelling of an RFC 3339 date-time: UTC, truncated to milliseconds (ENC-5). */
function canonicalTimestamp(value) {
  if (typeof value !== 'string') throw encodingError('a timestamp is a string', 'ENC-5');
  const m = RFC3339.exec(value);
  if (!m) throw encodingError('not an RFC 3339 date-time with a time zone offset', 'ENC-5');
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  if (!realInstant(y, mo, d, h, mi, s)) throw encodingError('the date-time names no real instant', 'ENC-4');
  const millis = Number((m[7] || '').slice(0, 3).padEnd(3, '0'));
  let offsetMinutes = 0;
  if (!m[8]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) throw encodingError('the offset is out of range', 'ENC-5');
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const seconds = daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offsetMinutes * 60;
  const days = Math.floor(seconds / 86400);
  let rest = seconds - days * 86400;
  const [uy, um, ud] = civilFromDays(days);
  if (uy < 1 || uy > 9999) throw encodingError('the instant in UTC is outside the years 0001-9999', 'ENC-4');
  const uh = Math.floor(rest / 3600);
  rest -= uh * 3600;
  const umi = Math.floor(rest / 60);
  const us = rest - umi * 60;
  return `${pad(uy, 4)}-${pad(um, 2)}-${pad(ud, 2)}T${pad(uh, 2)}:${pad(umi, 2)}:${pad(us, 2)}.${pad(millis, 3)}Z`;
}

// ------------------------------------------------------------------ confidence

const CONFIDENCE_SPELLING = /^(?:0\.[0-9]{4}|1\.0000)$/;

function isWireConfidence(value) {
  return typeof value === 'string' && CONFIDENCE_SPELLING.test(value);
}

/**
 * The wire string of a number in [0, 1] (CONF-2): the exact binary value of the double is
 * rounded half-to-even to four decimals, with BigInt arithmetic so nothing is lost.
 */
function confidenceToWire(value) {
  const reject = (msg) => new MemspecError('record', msg, 'CONF-2');
  let x;
  if (value instanceof JFloat) x = value.value;
  else if (typeof value === 'number') x = value;
  else if (typeof value === 'bigint') throw reject(`confidence ${value} is outside [0, 1]`);
  else throw reject('a confidence to convert must be a number');
  if (!(x >= 0 && x <= 1)) throw reject(`confidence ${x} is outside [0, 1]`);
  if (x === 0) return '0.0000'; // negative zero included
  if (x === 1) return '1.0000';
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  // x = mantissa * 2^exponent exactly; for 0 < x < 1 the exponent is negative.
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = biased === 0 ? -1074 : biased - 1075;
  const numerator = mantissa * 10000n;
  const denominator = 1n << BigInt(-exponent);
  let q = numerator / denominator;
  const twice = 2n * (numerator % denominator);
  if (twice > denominator || (twice === denominator && (q & 1n) === 1n)) q += 1n;
  return `${q / 10000n}.${pad(q % 10000n, 4)}`;
}

// ------------------------------------------------------------------ reasons

// The spec does not pin which characters are "whitespace". This is the Unicode White_Space
// property plus U+001C..U+001F (the separators with bidi class B/S), which is the set the kit's
// schema check (`\S` under Python's re) and memspec's core (str.strip) use. JavaScript's own
// \s differs: it includes U+FEFF and excludes U+001C..U+001F and U+0085.
// The spec pins "whitespace" for reasons to ASCII: U+0009-U+000D and U+0020 (section 1.2).
const WHITE_SPACE = /^[\t\n\v\f\r ]*$/;

/** A reason: a string holding at least one character other than ASCII whitespace. */
function isReason(value) {
  return typeof value === 'string' && !WHITE_SPACE.test(value);
}

module.exports = {
  addressFromPublicKey,
  b58decode,
  b58encode,
  canonicalTimestamp,
  checkTimestamp,
  confidenceToWire,
  decodeSignature,
  encodeSignature,
  hexToBytes,
  isAddress,
  isCanonicalTimestamp,
  isReason,
  isWireConfidence,
  publicKeyFromAddress,
};
