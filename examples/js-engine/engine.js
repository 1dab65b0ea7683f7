#!/usr/bin/env node
'use strict';
// memspec example engine in JavaScript: the profiles format, signing and store of
// fg-agent-memory/0.1, spoken over the memspec-engine/1 process protocol (SPEC.md section 18):
// one JSON request per line on stdin, one JSON response per line on stdout, in order.
// No npm dependencies: node's crypto provides SHA-256 and Ed25519.

const {
  MemspecError, encodeWire, fromEntries, has, isObject, parseCanonicalText, parseJSON,
  canonicalBytes,
} = require('./canonical');
const enc = require('./encoding');
const rec = require('./records');
const { MemoryStore } = require('./store');

const NAME = 'memspec-js-example';
const VERSION = '0.1.0';
const SPEC_VERSION = 'fg-agent-memory/0.1';
const PROTOCOL = 'memspec-engine/1';
const PROFILES = ['format', 'signing', 'store'];

let store = new MemoryStore();

function result(entries) {
  return fromEntries(Object.entries(entries));
}

function hello(args) {
  if (args.protocol !== PROTOCOL || args.spec_version !== SPEC_VERSION) {
    // SPEC 18.2: a version the engine does not speak is answered with code protocol.
    throw new MemspecError('protocol',
      `this engine speaks ${PROTOCOL} for ${SPEC_VERSION}, not ${args.protocol} for ${args.spec_version}`, 'PROTO-2');
  }
  return result({ name: NAME, version: VERSION, spec_version: SPEC_VERSION, protocol: PROTOCOL, profiles: PROFILES });
}

/** Operations by name: hello and reset (core), then the format, signing and store profiles. */
// Arguments arrive as a null-prototype object: a missing argument reads as undefined, which
// every check rejects with the class its operation names.
const OPERATIONS = {
  hello,
  reset: () => {
    store = new MemoryStore();
    return result({});
  },
  bye: () => result({}),

  // format
  canonicalize: (a) => result({ hex: canonicalBytes(parseCanonicalText(a.text)).toString('hex') }),
  canonical_timestamp: (a) => result({ timestamp: enc.canonicalTimestamp(a.value) }),
  confidence_to_wire: (a) => result({ wire: enc.confidenceToWire(a.value) }),
  address: (a) => result({ address: enc.addressFromPublicKey(enc.hexToBytes(a.public_key_hex, 'public_key_hex')) }),
  parse_address: (a) => result({ public_key_hex: enc.publicKeyFromAddress(a.address).toString('hex') }),
  decode_signature: (a) => result({ hex: enc.decodeSignature(a.signature).toString('hex') }),
  record_id: (a) => {
    const record = a.record;
    if (!isObject(record)) throw new MemspecError('record', 'a record is a JSON object', 'REC-1');
    const digest = rec.birthDigest(record); // canonical failures keep class canonical
    return result({ id: 'mem:' + digest.slice(0, 32), birth_digest: digest });
  },
  validate_record: (a) => result({ record: rec.validateRecord(a.record) }),
  create_record: (a) => result({ record: rec.createRecord(a) }),
  evolve_record: (a) => result({ record: rec.evolveRecord(a.record, a.changes, a.now) }),
  validate_file: (a) => result({ file: rec.validateFile(a.file) }),

  // signing
  derive_key: (a) => {
    const key = rec.SigningKey.fromHex(a.seed_hex);
    return result({ address: key.address, public_key_hex: key.publicKey.toString('hex') });
  },
  signing_input: (a) => result({ hex: rec.signingInput(a.context, a.payload).toString('hex') }),
  ed25519_verify: (a) => {
    const key = enc.hexToBytes(a.public_key_hex, 'public_key_hex');
    const message = enc.hexToBytes(a.message_hex, 'message_hex');
    const signature = enc.hexToBytes(a.signature_hex, 'signature_hex');
    return result({ valid: rec.ed25519Verify(key, message, signature) });
  },
  sign_record: (a) => {
    const record = a.record;
    rec.validateRecord(record);
    return result({ record: rec.signRecord(record, rec.SigningKey.fromHex(a.seed_hex)) });
  },
  verify_record: (a) => result({ signed: rec.verifyRecord(a.record) }),
  sign_file: (a) => {
    const file = rec.validateFile(a.file);
    return result({ file: rec.signFile(file, rec.SigningKey.fromHex(a.seed_hex)) });
  },
  verify_file: (a) => {
    rec.verifyFile(a.file, a.require_signature);
    return result({});
  },

  // store
  put: (a) => result({ version: store.put(a.record) }),
  get: (a) => result({ record: store.get(a.id) }),
  history: (a) => result({ records: store.history(a.id) }),
  list: (a) => result({ records: store.list(a) }),
  iterate: () => result({ records: store.iterate() }),
};

// ------------------------------------------------------------------ the protocol loop

function respond(message) {
  process.stdout.write(encodeWire(message) + '\n');
}

function errorResponse(id, code, message, requirement) {
  const error = result({ code, message });
  if (requirement) error.requirement = requirement;
  return result({ id, ok: false, error });
}

let done = false;

function handle(line) {
  let message;
  try {
    message = parseJSON(line, { strict: false, errorCode: 'protocol', maxDepth: 512 });
  } catch (e) {
    return errorResponse(null, 'protocol', `request line is not JSON: ${e.message}`);
  }
  if (!isObject(message)) return errorResponse(null, 'protocol', 'a request is a JSON object');
  const id = has(message, 'id') ? message.id : null;
  // SPEC 18.2: request ids are integers from 0 to 2^53 - 1 only, never strings.
  if (!(typeof id === 'number' && Number.isInteger(id) && id >= 0 && !Object.is(id, -0)
        && id <= Number.MAX_SAFE_INTEGER)) {
    return errorResponse(null, 'protocol', 'a request id is an integer from 0 to 2^53 - 1');
  }
  const op = message.op;
  const args = has(message, 'args') ? message.args : fromEntries([]);
  if (typeof op !== 'string' || !isObject(args)) {
    return errorResponse(id, 'protocol', 'a request has op (a string) and args (an object)');
  }
  const operation = Object.prototype.hasOwnProperty.call(OPERATIONS, op) ? OPERATIONS[op] : undefined;
  if (!operation) return errorResponse(id, 'unsupported', `operation ${JSON.stringify(op)} is not implemented by ${NAME}`, 'PROTO-4');
  try {
    const out = operation(args);
    if (op === 'bye') done = true;
    return result({ id, ok: true, result: out });
  } catch (e) {
    if (e instanceof MemspecError) return errorResponse(id, e.code, e.message, e.requirement);
    process.stderr.write(`${NAME}: ${op} failed: ${e && e.stack ? e.stack : e}\n`);
    return errorResponse(id, 'internal', `${e && e.name}: ${e && e.message}`);
  }
}

function main() {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let pending = Buffer.alloc(0);
  process.stdin.on('data', (chunk) => {
    if (done) return;
    pending = Buffer.concat([pending, chunk]);
    let newline;
    while (!done && (newline = pending.indexOf(0x0a)) !== -1) {
      let raw = pending.subarray(0, newline);
      pending = pending.subarray(newline + 1);
      if (raw.length && raw[raw.length - 1] === 0x0d) raw = raw.subarray(0, raw.length - 1);
      let line;
      try {
        line = decoder.decode(raw);
      } catch (e) {
        respond(errorResponse(null, 'protocol', 'request line is not UTF-8'));
        continue;
      }
      if (!line.trim()) continue;
      respond(handle(line));
    }
    if (done) process.stdin.destroy(); // bye: the event loop drains stdout, then exits 0
  });
  process.stdin.on('end', () => {
    // A last request without its line feed is still answered; then the session is over.
    if (!done && pending.length) {
      try {
        const line = decoder.decode(pending);
        if (line.trim()) respond(handle(line));
      } catch (e) {
        respond(errorResponse(null, 'protocol', 'request line is not UTF-8'));
      }
    }
    done = true;
  });
}

main();
