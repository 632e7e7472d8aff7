'use strict';

const { PointerError } = require('./errors');

const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

function unescapeToken(token) {
  return token.replace(/~0/g, '~').replace(/~1/g, '/');
}

function escapeToken(token) {
  return String(token).replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The reference tokens of a JSON Pointer: '' -> [], '/a/0' -> ['a', '0']. */
function parsePointer(pointer) {
  if (pointer === '') return [];
  if (typeof pointer !== 'string' || pointer[0] !== '/') {
    throw new PointerError(`invalid pointer ${JSON.stringify(pointer)}: it must be empty or start with "/"`);
  }
  return pointer.slice(1).split('/').map(unescapeToken);
}

/** The JSON Pointer made of `tokens` (the inverse of parsePointer). */
function compilePointer(tokens) {
  return tokens.map((token) => `/${escapeToken(token)}`).join('');
}

/** The member or element `token` of `node`, or a PointerError naming `pointer`. */
function child(node, token, pointer) {
  if (Array.isArray(node)) {
    if (ARRAY_INDEX.test(token) && Number(token) < node.length) return node[Number(token)];
  } else if (node !== null && typeof node === 'object') {
    if (Object.prototype.hasOwnProperty.call(node, token)) return node[token];
  }
  throw new PointerError(`${JSON.stringify(pointer)}: no member ${JSON.stringify(token)}`);
}

/** The value `pointer` refers to in `doc`. */
function get(doc, pointer) {
  return parsePointer(pointer).reduce((node, token) => child(node, token, pointer), doc);
}

/** Whether `pointer` refers to a value in `doc`. */
function has(doc, pointer) {
  try {
    get(doc, pointer);
    return true;
  } catch (err) {
    if (err instanceof PointerError) return false;
    throw err;
  }
}

module.exports = { parsePointer, compilePointer, get, has, ARRAY_INDEX };
