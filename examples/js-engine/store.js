'use strict';
// The RecordStore port (SPEC.md section 11.1): an in-memory, append-only map from record id to
// its versions in write order. Nothing is ever deleted or rewritten (STORE-1, STORE-2, STORE-6).

const { MemspecError, clone, has } = require('./canonical');
const { STATES, TYPES, isRecordId, isTombstone, validateRecord } = require('./records');

class MemoryStore {
  constructor() {
    this.versions = new Map();
  }

  /** Validate, then append; the 1-based number of the version written. */
  put(record) {
    validateRecord(record);
    const existing = this.versions.get(record.id);
    if (existing) checkSameBirth(existing[0], record);
    const copy = clone(record);
    if (existing) existing.push(copy);
    else this.versions.set(record.id, [copy]);
    return this.versions.get(record.id).length;
  }

  get(id) {
    const versions = this.lookup(id);
    return clone(versions[versions.length - 1]);
  }

  history(id) {
    return this.lookup(id).map(clone);
  }

  /** Latest versions matching every filter given, in ascending id order (STORE-5). */
  list(filters) {
    // An absent or null filter is no filter.
    const given = (name) => (has(filters, name) && filters[name] !== null ? filters[name] : undefined);
    const [state, type, tag] = [given('state'), given('type'), given('tag')];
    if (state !== undefined && !STATES.has(state)) throw new MemspecError('record', `unknown state filter ${JSON.stringify(state)}`, 'REC-4');
    if (type !== undefined && !TYPES.has(type)) throw new MemspecError('record', `unknown type filter ${JSON.stringify(type)}`, 'REC-4');
    if (tag !== undefined && typeof tag !== 'string') throw new MemspecError('record', 'the tag filter is a string', 'REC-10');
    const wanted = tag === undefined ? undefined : tag.normalize('NFC');
    return this.iterate().filter((r) => (state === undefined || r.state === state) &&
      (type === undefined || r.type === type) &&
      (wanted === undefined || r.tags.some((t) => t.normalize('NFC') === wanted)));
  }

  iterate() {
    return [...this.versions.keys()].sort().map((id) => this.get(id));
  }

  lookup(id) {
    // A malformed id never reaches storage (STORE-10).
    if (!isRecordId(id)) throw new MemspecError('record', `${JSON.stringify(id)} is not a record id`, 'REC-3');
    const versions = this.versions.get(id);
    if (!versions) throw new MemspecError('not-found', `no record ${id}`, 'STORE-4');
    return versions;
  }
}

/** created_at and occurred_at keep their birth values in every later version (REC-7). */
function checkSameBirth(first, record) {
  if (isTombstone(first) || isTombstone(record)) return;
  if (first.created_at !== record.created_at ||
      has(first, 'occurred_at') !== has(record, 'occurred_at') ||
      first.occurred_at !== record.occurred_at) {
    throw new MemspecError('record', `a new version of ${record.id} changes created_at or occurred_at`, 'REC-7');
  }
}

module.exports = { MemoryStore };
