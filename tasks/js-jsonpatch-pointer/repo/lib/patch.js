'use strict';

const { PatchError, PointerError } = require('./errors');
const { parsePointer, compilePointer, get, ARRAY_INDEX } = require('./pointer');
const { deepEqual } = require('./equal');

/**
 * Apply the JSON Patch `operations` to a copy of `doc` and return the copy. The input is
 * never modified, so a failing operation leaves nothing half-applied.
 */
function applyPatch(doc, operations) {
  if (!Array.isArray(operations)) throw new PatchError('a patch is an array of operations');
  return operations.reduce((current, operation, index) => {
    try {
      return applyOperation(current, operation);
    } catch (err) {
      if (err instanceof PointerError) throw new PatchError(err.message, index);
      if (err instanceof PatchError && err.index === undefined) throw new PatchError(err.message, index);
      throw err;
    }
  }, clone(doc));
}

function applyOperation(doc, operation) {
  const { op, path } = operation;
  switch (op) {
    case 'add':
      return add(doc, path, clone(operation.value));
    case 'remove':
      return remove(doc, path);
    case 'replace':
      if (path === '') return clone(operation.value);
      return add(remove(doc, path), path, clone(operation.value));
    case 'move': {
      if (path.startsWith(`${operation.from}/`)) {
        throw new PatchError(`cannot move ${operation.from} into its own child ${path}`);
      }
      const value = get(doc, operation.from);
      return add(remove(doc, operation.from), path, value);
    }
    case 'copy':
      return add(doc, path, clone(get(doc, operation.from)));
    case 'test':
      if (!deepEqual(get(doc, path), operation.value)) {
        throw new PatchError(`test failed: ${path} is not ${JSON.stringify(operation.value)}`);
      }
      return doc;
    default:
      throw new PatchError(`unknown operation ${JSON.stringify(op)}`);
  }
}

/** The parent container of `path` and the last token, for add and remove. */
function locate(doc, path) {
  const tokens = parsePointer(path);
  const last = tokens.pop();
  const parent = get(doc, compilePointer(tokens));
  if (parent === null || typeof parent !== 'object') throw new PatchError(`${path}: the parent is not a container`);
  return { parent, last };
}

function add(doc, path, value) {
  if (path === '') return value;
  const { parent, last } = locate(doc, path);
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : arrayIndex(last, parent.length, path);
    parent[index] = value;
  } else {
    parent[last] = value;
  }
  return doc;
}

function remove(doc, path) {
  if (path === '') throw new PatchError('cannot remove the whole document');
  get(doc, path);
  const { parent, last } = locate(doc, path);
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else delete parent[last];
  return doc;
}

/** `token` as an index into an array, at most `max`. */
function arrayIndex(token, max, path) {
  if (!ARRAY_INDEX.test(token) || Number(token) > max) {
    throw new PatchError(`${path}: ${JSON.stringify(token)} is not an index of the array`);
  }
  return Number(token);
}

function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

module.exports = { applyPatch };
