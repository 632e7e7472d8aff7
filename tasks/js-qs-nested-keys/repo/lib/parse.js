'use strict';

const { decodeComponent } = require('./decode');
const { splitKey } = require('./keys');

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

/** Parse a query string into a plain object (see the README for the rules). */
function parse(query, options = {}) {
  const delimiter = options.delimiter || '&';
  const result = {};
  const text = String(query == null ? '' : query).replace(/^\?/, '');
  for (const part of text.split(delimiter)) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawKey = eq === -1 ? part : part.slice(0, eq);
    const rawValue = eq === -1 ? '' : part.slice(eq + 1);
    const path = splitKey(decodeComponent(rawKey));
    if (path.some((segment) => FORBIDDEN.has(segment))) continue;
    assign(result, path, decodeComponent(rawValue));
  }
  return result;
}

/** Store `value` at `path` inside `target`, creating objects and arrays on the way. */
function assign(target, path, value) {
  let node = target;
  for (let i = 0; i < path.length - 1; i += 1) {
    const segment = path[i];
    if (node[segment] === null || typeof node[segment] !== 'object') {
      node[segment] = path[i + 1] === '' ? [] : {};
    }
    node = node[segment];
  }
  const last = path[path.length - 1];
  if (Array.isArray(node) && last === '') {
    node.push(value);
  } else if (Object.prototype.hasOwnProperty.call(node, last)) {
    node[last] = [].concat(node[last], value);
  } else {
    node[last] = value;
  }
}

module.exports = { parse };
