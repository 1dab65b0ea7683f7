'use strict';
// Records (SPEC.md sections 3-7, the format rules of 8.2-8.5, 10 and 17): the signing input,
// Ed25519 keys, content addresses, record and memory-file validation, creation, evolution,
// and signing / verification of records and files.

const crypto = require('crypto');
const {
  MemspecError, canonicalBytes, clone, codePointLength, has, isObject, newObject,
} = require('./canonical');
const enc = require('./encoding');

// ------------------------------------------------------------------ signing input and keys

const DOMAIN = 'fg-agent-memory/v1';
const CONTEXTS = new Set(['record', 'memory-file', 'conformance-report']);

/** uint16be(len(tag)) || tag || canonical_json(payload), tag = DOMAIN/context (SIG-1, SIG-2). */
function signingInput(context, payload) {
  if (typeof context !== 'string' || !CONTEXTS.has(context)) {
    throw new MemspecError('signature', `unknown signing context ${JSON.stringify(context)}`, 'SIG-2');
  }
  const tag = Buffer.from(`${DOMAIN}/${context}`, 'utf8');
  const length = Buffer.from([tag.length >> 8, tag.length & 0xff]);
  return Buffer.concat([length, tag, canonicalBytes(payload)]);
}

// RFC 8410 DER wrappers around raw Ed25519 keys.
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

class SigningKey {
  constructor(seed) {
    this.privateKey = crypto.createPrivateKey({
      key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8',
    });
    const spki = crypto.createPublicKey(this.privateKey).export({ format: 'der', type: 'spki' });
    this.publicKey = spki.subarray(SPKI_PREFIX.length);
    this.address = enc.addressFromPublicKey(this.publicKey);
  }

  static fromHex(seedHex) {
    const seed = enc.hexToBytes(seedHex, 'seed_hex');
    if (seed.length !== 32) throw new MemspecError('encoding', `a seed is 32 bytes, not ${seed.length}`);
    return new SigningKey(seed);
  }

  /** The base64 signature of a payload under a context. */
  sign(context, payload) {
    return enc.encodeSignature(crypto.sign(null, signingInput(context, payload), this.privateKey));
  }
}

const FIELD_P = (1n << 255n) - 19n;
// The y coordinates of the eight points of small order (SIG-11).
const SMALL_ORDER_Y = new Set([
  0n, 1n, FIELD_P - 1n,
  2707385501144840649318225287225658788936804267575313519463743609750303402022n,
  55188659117513257062467267217118295137698188065244968500265048394206261417927n,
]);

/** The low 255 bits of a 32-byte point encoding, little-endian: its y coordinate. */
function pointY(bytes) {
  let y = 0n;
  for (let i = 31; i >= 0; i -= 1) y = (y << 8n) | BigInt(i === 31 ? bytes[i] & 0x7f : bytes[i]);
  return y;
}

/** SIG-11: a key of small order or in a non-canonical encoding, or an R of small order. */
function weakPoints(publicKey, signature) {
  const keyY = pointY(publicKey);
  const rY = pointY(signature.subarray(0, 32));
  return keyY >= FIELD_P || SMALL_ORDER_Y.has(keyY)
    || SMALL_ORDER_Y.has(rY >= FIELD_P ? rY - FIELD_P : rY);
}

/** RFC 8032 Ed25519 verification refusing weak points (SIG-11); false, never an error. */
function ed25519Verify(publicKey, message, signature) {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  if (weakPoints(publicKey, signature)) return false;
  try {
    const key = crypto.createPublicKey({
      key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki',
    });
    return crypto.verify(null, message, key, signature);
  } catch (e) {
    return false;
  }
}

/** Verify a signature whose key comes from an address only (SIG-5); class signature on failure. */
function verifyByAddress(address, context, payload, signature) {
  let key;
  let sig;
  try {
    key = enc.publicKeyFromAddress(address);
    sig = enc.decodeSignature(signature);
  } catch (e) {
    throw new MemspecError('signature', `unusable signature or signer: ${e.message}`, 'SIG-8');
  }
  if (!ed25519Verify(key, signingInput(context, payload), sig)) {
    throw new MemspecError('signature', `the ${context} signature does not verify for ${address}`, 'SIG-8');
  }
}

// ------------------------------------------------------------------ record fields

const REQUIRED = [
  'id', 'type', 'body', 'slots', 'state', 'confidence', 'created_at', 'updated_at', 'provenance',
  'evidence', 'supersedes', 'superseded_by', 'transition', 'state_reason', 'tags', 'flagged',
  'flag_reason', 'signed_by', 'signature',
];
const OPTIONAL = ['occurred_at', 'redacted', 'redaction_reason', 'birth_digest'];
const DEFINED = new Set([...REQUIRED, ...OPTIONAL]);
const BIRTH = ['type', 'body', 'slots', 'provenance', 'created_at'];
const TYPES = new Set(['fact', 'episode', 'procedure', 'rule']);
const STATES = new Set(['active', 'transitional', 'superseded', 'archived']);
const RECORD_ID = /^mem:[0-9a-f]{32}$/;
const DIGEST = /^[0-9a-f]{64}$/;
const MAX_BODY = 262144;
const REDACTED_BODY = '[redacted]';

function isRecordId(value) {
  return typeof value === 'string' && RECORD_ID.test(value);
}

function recordError(message, requirement) {
  return new MemspecError('record', message, requirement);
}

/** The full SHA-256 hex digest of the canonical birth content (five fields). */
function birthDigest(record) {
  const birth = newObject();
  for (const f of BIRTH) {
    if (!has(record, f)) throw recordError(`the birth field ${f} is missing`, 'REC-1');
    birth[f] = record[f];
  }
  return crypto.createHash('sha256').update(canonicalBytes(birth)).digest('hex');
}

function contentAddress(record) {
  return 'mem:' + birthDigest(record).slice(0, 32);
}

function isTombstone(record) {
  return has(record, 'redacted') || has(record, 'redaction_reason') || has(record, 'birth_digest');
}

function distinct(values, key = (v) => v) {
  return new Set(values.map(key)).size === values.length;
}

/** Every per-record rule (section 4.6); MemspecError('record') naming the rule on failure. */
function validateRecord(record) {
  if (!isObject(record)) throw recordError('a record is a JSON object', 'REC-1');
  for (const f of REQUIRED) if (!has(record, f)) throw recordError(`missing field ${f}`, 'REC-1');
  try {
    canonicalBytes(record);
  } catch (e) {
    throw recordError(`the record is not canonical JSON: ${e.message}`, e.requirement);
  }
  const r = record;
  if (!isRecordId(r.id)) throw recordError('id is mem: and 32 lowercase hex digits', 'REC-3');
  if (!TYPES.has(r.type)) throw recordError(`unknown type ${JSON.stringify(r.type)}`, 'REC-4');
  if (!STATES.has(r.state)) throw recordError(`unknown state ${JSON.stringify(r.state)}`, 'REC-4');
  if (typeof r.body !== 'string' || r.body.length === 0) throw recordError('body is a non-empty string', 'REC-5');
  if (codePointLength(r.body.normalize('NFC')) > MAX_BODY) throw recordError('body is over 262144 code points', 'REC-5');
  if (!isObject(r.slots)) throw recordError('slots is an object', 'REC-5');
  checkProvenance(r.provenance);
  if (!enc.isWireConfidence(r.confidence)) throw recordError('confidence is a four-digit wire string', 'CONF-1');
  for (const f of ['created_at', 'updated_at']) {
    if (!enc.isCanonicalTimestamp(r[f])) throw recordError(`${f} is not a canonical timestamp`, 'ENC-4');
  }
  if (has(r, 'occurred_at') && !enc.isCanonicalTimestamp(r.occurred_at)) {
    throw recordError('occurred_at, when present, is a canonical timestamp', r.occurred_at === null ? 'REC-11' : 'ENC-4');
  }
  if (r.updated_at < r.created_at) throw recordError('updated_at is earlier than created_at', 'REC-7');
  if (!Array.isArray(r.evidence) || !r.evidence.every(isRecordId)) throw recordError('evidence is an array of record ids', 'REC-8');
  if (!distinct(r.evidence)) throw recordError('evidence ids repeat', 'REC-8');
  if (r.evidence.includes(r.id)) throw recordError('a record is not its own evidence', 'REC-8');
  if (r.type === 'rule' && r.evidence.length === 0) throw recordError('a rule carries evidence', 'RULE-1');
  for (const f of ['supersedes', 'superseded_by']) {
    if (r[f] !== null && (!isRecordId(r[f]) || r[f] === r.id)) throw recordError(`${f} is null or another record's id`, 'SUP-4');
  }
  if ((r.state === 'active' || r.state === 'transitional') && r.superseded_by !== null) {
    throw recordError(`an ${r.state} record has superseded_by null`, 'SUP-3');
  }
  if (r.state === 'superseded' && r.superseded_by === null) throw recordError('a superseded record names its successor', 'SUP-2');
  checkTransition(r);
  if (r.state_reason !== null && typeof r.state_reason !== 'string') throw recordError('state_reason is a string or null', 'REC-9');
  if ((r.state === 'superseded' || r.state === 'archived') && !enc.isReason(r.state_reason)) {
    throw recordError(`a ${r.state} record carries a reason in state_reason`, 'LC-3');
  }
  if (!Array.isArray(r.tags) || !r.tags.every((t) => typeof t === 'string' && t.length > 0)) {
    throw recordError('tags is an array of non-empty strings', 'REC-10');
  }
  if (!distinct(r.tags, (t) => t.normalize('NFC'))) throw recordError('tags repeat', 'REC-10');
  if (typeof r.flagged !== 'boolean') throw recordError('flagged is a boolean', 'RULE-4');
  if (r.flagged && r.type !== 'rule') throw recordError('only rules are flagged', 'RULE-4');
  if (r.flagged ? !enc.isReason(r.flag_reason) : r.flag_reason !== null) {
    throw recordError('flag_reason is a reason exactly when flagged', 'RULE-4');
  }
  checkSignatureFields(r);
  if (isTombstone(r)) checkTombstone(r);
  else if (r.id !== contentAddress(r)) throw recordError('id is not the content address of the birth content', 'ID-2');
  return record;
}

function checkProvenance(p) {
  if (!isObject(p)) throw recordError('provenance is an object', 'REC-6');
  const keys = Object.keys(p).sort();
  if (keys.join(',') !== 'agent,kind,ref') throw recordError('provenance has exactly kind, ref and agent', 'REC-6');
  if (typeof p.kind !== 'string' || p.kind.length === 0) throw recordError('provenance.kind is a non-empty string', 'REC-6');
  if (p.ref !== null && typeof p.ref !== 'string') throw recordError('provenance.ref is a string or null', 'REC-6');
  if (p.agent !== null && !enc.isAddress(p.agent)) throw recordError('provenance.agent is an address or null', 'ENC-1');
}

function checkTransition(r) {
  const block = r.transition;
  if (r.state === 'transitional' ? block === null : block !== null) {
    throw recordError('a record carries a transition block exactly when transitional', 'TRN-2');
  }
  if (block === null) return;
  if (!isObject(block)) throw recordError('transition is an object or null', 'TRN-2');
  if (Object.keys(block).sort().join(',') !== 'reason,sides') throw recordError('a transition block has exactly sides and reason', 'TRN-1');
  const sides = block.sides;
  if (!Array.isArray(sides) || sides.length !== 2 || !sides.every(isRecordId) || sides[0] === sides[1] || !sides.includes(r.id)) {
    throw recordError('sides are two distinct record ids, one of them this record', 'TRN-1');
  }
  if (!enc.isReason(block.reason)) throw recordError('a transition block carries a reason', 'TRN-1');
}

function checkSignatureFields(r) {
  if (r.signed_by === null) {
    if (r.signature !== '') throw recordError('an unsigned record has signature ""', 'SIG-6');
    return;
  }
  if (!enc.isAddress(r.signed_by)) throw recordError('signed_by is an address or null', 'ENC-1');
  if (typeof r.signature !== 'string' || r.signature === '') throw recordError('a signed record has a signature', 'SIG-6');
  if (!isSignatureSpelling(r.signature)) throw recordError('the signature is not in its one base64 spelling', 'ENC-3');
}

function isSignatureSpelling(value) {
  try {
    enc.decodeSignature(value);
    return true;
  } catch (e) {
    return false;
  }
}

/**
 * Verification reports a present but malformed signature as class signature (the vectors pin
 * this), so the verify operations look at the spelling before the general validation, which
 * would report it as class record or file.
 */
function checkPresentSignature(artifact, signerField) {
  if (!isObject(artifact) || artifact[signerField] === null || artifact[signerField] === undefined) return;
  const sig = artifact.signature;
  if (typeof sig === 'string' && sig !== '' && !isSignatureSpelling(sig)) {
    throw new MemspecError('signature', 'the signature is not in its one base64 spelling', 'ENC-3');
  }
}

function checkTombstone(r) {
  if (r.redacted !== true) throw recordError('redaction fields appear only with redacted true', 'RED-4');
  if (!enc.isReason(r.redaction_reason)) throw recordError('a tombstone carries a reason in redaction_reason', 'RED-4');
  if (typeof r.birth_digest !== 'string' || !DIGEST.test(r.birth_digest)) {
    throw recordError('birth_digest is 64 lowercase hex digits', 'RED-4');
  }
  const p = r.provenance;
  const wiped = r.state === 'archived' && r.body === REDACTED_BODY && Object.keys(r.slots).length === 0 &&
    r.tags.length === 0 && !has(r, 'occurred_at') && p.kind === 'redaction' && p.ref === null &&
    p.agent === null && r.confidence === '0.0000' && r.signed_by === null && r.signature === '';
  if (!wiped) throw recordError('a tombstone keeps none of the destroyed content', 'RED-3');
  if (r.id !== 'mem:' + r.birth_digest.slice(0, 32)) throw recordError('a tombstone id is the head of its birth_digest', 'RED-5');
}

// ------------------------------------------------------------------ creation and evolution

const CREATE_ARGS = new Set([
  'type', 'body', 'provenance', 'now', 'slots', 'confidence', 'evidence', 'tags', 'supersedes',
  'occurred_at', 'extra',
]);

/** A newborn record (section 4.4); invalid arguments are class record, an invalid now encoding. */
function createRecord(args) {
  enc.checkTimestamp(args.now, 'now');
  for (const k of Object.keys(args)) {
    if (!CREATE_ARGS.has(k)) throw recordError(`create_record has no argument ${k}`);
  }
  for (const k of ['type', 'body', 'provenance']) {
    if (!has(args, k)) throw recordError(`create_record needs ${k}`, 'REC-1');
  }
  let provenance = args.provenance;
  if (isObject(provenance)) {
    provenance = clone(provenance);
    for (const k of ['ref', 'agent']) if (!has(provenance, k)) provenance[k] = null;
  }
  let confidence = '1.0000';
  if (has(args, 'confidence')) {
    const c = args.confidence;
    if (typeof c === 'string') {
      if (!enc.isWireConfidence(c)) throw recordError('confidence is not a wire confidence', 'CONF-1');
      confidence = c;
    } else {
      confidence = enc.confidenceToWire(c);
    }
  }
  const r = newObject();
  r.id = '';
  r.type = args.type;
  r.body = args.body;
  r.slots = has(args, 'slots') ? clone(args.slots) : newObject();
  r.state = 'active';
  r.confidence = confidence;
  r.created_at = args.now;
  r.updated_at = args.now;
  r.provenance = provenance;
  r.evidence = has(args, 'evidence') ? clone(args.evidence) : [];
  r.supersedes = has(args, 'supersedes') ? args.supersedes : null;
  r.superseded_by = null;
  r.transition = null;
  r.state_reason = null;
  r.tags = has(args, 'tags') ? clone(args.tags) : [];
  r.flagged = false;
  r.flag_reason = null;
  r.signed_by = null;
  r.signature = '';
  if (has(args, 'occurred_at') && args.occurred_at !== null) r.occurred_at = args.occurred_at;
  if (has(args, 'extra')) {
    if (!isObject(args.extra)) throw recordError('extra is an object of extension fields', 'REC-12');
    for (const k of Object.keys(args.extra)) {
      if (DEFINED.has(k)) throw recordError(`the extension field ${k} shadows a defined field`, 'REC-12');
      r[k] = clone(args.extra[k]);
    }
  }
  try {
    r.id = contentAddress(r);
  } catch (e) {
    throw recordError(`the birth content is not canonical JSON: ${e.message}`, e.requirement);
  }
  return validateRecord(r);
}

const FIXED_AT_BIRTH = new Set(['id', 'type', 'body', 'slots', 'provenance', 'created_at', 'occurred_at']);

/** A new version: changes applied, updated_at = now, signature cleared (section 4.5, SIG-9). */
function evolveRecord(record, changes, now) {
  enc.checkTimestamp(now, 'now');
  validateRecord(record);
  if (!isObject(changes)) throw recordError('changes is an object');
  const out = clone(record);
  for (const k of Object.keys(changes)) {
    if (FIXED_AT_BIRTH.has(k)) throw recordError(`${k} is fixed at birth and cannot change`, k === 'id' ? 'ID-3' : 'REC-7');
    out[k] = clone(changes[k]);
  }
  out.updated_at = now;
  out.signed_by = null;
  out.signature = '';
  return validateRecord(out);
}

// ------------------------------------------------------------------ record signatures

function signedPayload(record, address) {
  const payload = clone(record);
  delete payload.signature;
  payload.signed_by = address;
  return payload;
}

function signRecord(record, key) {
  validateRecord(record);
  if (isTombstone(record)) throw new MemspecError('signature', 'a tombstone is never signed', 'RED-3');
  const out = signedPayload(record, key.address);
  out.signature = key.sign('record', out);
  return out;
}

/** true for a valid signature, false for an unsigned record; class signature otherwise. */
function verifyRecord(record) {
  checkPresentSignature(record, 'signed_by');
  validateRecord(record);
  if (record.signed_by === null) return false;
  const payload = clone(record);
  delete payload.signature;
  verifyByAddress(record.signed_by, 'record', payload, record.signature);
  return true;
}

// ------------------------------------------------------------------ memory files

const FORMAT_VERSION = 'fg-agent-memory/0.1';
const FILE_MEMBERS = ['format', 'agent', 'created_at', 'records', 'signature'];

function fileError(message, requirement) {
  return new MemspecError('file', message, requirement);
}

function validateFile(file) {
  if (!isObject(file)) throw fileError('a memory file is a JSON object', 'FILE-1');
  for (const m of FILE_MEMBERS) if (!has(file, m)) throw fileError(`missing member ${m}`, 'FILE-1');
  try {
    canonicalBytes(file);
  } catch (e) {
    throw fileError(`the file is not canonical JSON: ${e.message}`, e.requirement);
  }
  if (file.format !== FORMAT_VERSION) throw fileError(`format is ${FORMAT_VERSION}`, 'FILE-2');
  if (file.agent !== null && !enc.isAddress(file.agent)) throw fileError('agent is an address or null', 'FILE-1');
  if (!enc.isCanonicalTimestamp(file.created_at)) throw fileError('created_at is a canonical timestamp', 'FILE-1');
  if (!Array.isArray(file.records)) throw fileError('records is an array', 'FILE-1');
  if (typeof file.signature !== 'string') throw fileError('signature is a string', 'FILE-1');
  if (Object.prototype.hasOwnProperty.call(file, 'sequence')) {
    const seq = file.sequence;
    // ROLL-1: an integer token from 0 to 2^53 - 1 (floats arrive as Float from the parser)
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
      throw fileError('sequence is an integer from 0 to 2^53 - 1', 'ROLL-1');
    }
  }
  if (file.signature !== '' && file.agent === null) throw fileError('a signed file names its signer in agent', 'FILE-3');
  if (file.signature !== '' && !isSignatureSpelling(file.signature)) {
    throw fileError('the file signature is not in its one base64 spelling', 'ENC-3');
  }
  const seen = new Set();
  file.records.forEach((record, i) => {
    try {
      validateRecord(record);
    } catch (e) {
      if (!(e instanceof MemspecError)) throw e;
      throw fileError(`records[${i}]: ${e.message}`, e.requirement);
    }
    if (seen.has(record.id)) throw fileError(`record ${record.id} appears twice`, 'FILE-4');
    seen.add(record.id);
  });
  return file;
}

function filePayload(file) {
  const payload = clone(file);
  delete payload.signature;
  return payload;
}

function signFile(file, key) {
  validateFile(file);
  const out = filePayload(file);
  out.agent = key.address;
  out.signature = key.sign('memory-file', out);
  return out;
}

function verifyFile(file, requireSignature) {
  checkPresentSignature(file, 'agent');
  if (isObject(file) && Array.isArray(file.records)) {
    for (const record of file.records) checkPresentSignature(record, 'signed_by');
  }
  validateFile(file);
  if (typeof requireSignature !== 'boolean') throw fileError('require_signature is a boolean');
  if (file.signature === '') {
    if (requireSignature) throw new MemspecError('signature', 'the file is unsigned and a signature is required', 'FILE-5');
  } else {
    verifyByAddress(file.agent, 'memory-file', filePayload(file), file.signature);
  }
  for (const record of file.records) {
    if (record.signed_by !== null) verifyRecord(record);
  }
}

module.exports = {
  FORMAT_VERSION,
  SigningKey,
  STATES,
  TYPES,
  birthDigest,
  contentAddress,
  createRecord,
  ed25519Verify,
  evolveRecord,
  isRecordId,
  isTombstone,
  signFile,
  signRecord,
  signingInput,
  validateFile,
  validateRecord,
  verifyFile,
  verifyRecord,
};
