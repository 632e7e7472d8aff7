'use strict';

const { joinKey } = require('./keys');

const ARRAY_FORMATS = new Set(['brackets', 'indices', 'repeat']);

/** Percent-encode one key segment or value; a space becomes %20. */
function encodeComponent(text) {
  return encodeURI(String(text));
}

/** Build a query string from a plain object (see the README for the rules). */
function stringify(object, options = {}) {
  const arrayFormat = options.arrayFormat || 'brackets';
  if (!ARRAY_FORMATS.has(arrayFormat)) {
    throw new TypeError(`unknown arrayFormat ${JSON.stringify(arrayFormat)}`);
  }
  const pairs = [];
  for (const key of Object.keys(object || {})) {
    walk([key], object[key], arrayFormat, pairs);
  }
  return pairs.join('&');
}

function walk(path, value, arrayFormat, pairs) {
  if (value === undefined) return;
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      if (arrayFormat === 'repeat') walk(path, item, arrayFormat, pairs);
      else walk([...path, arrayFormat === 'indices' ? String(index) : ''], item, arrayFormat, pairs);
    });
    return;
  }
  if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) walk([...path, key], value[key], arrayFormat, pairs);
    return;
  }
  const key = joinKey(path.map(encodeComponent));
  pairs.push(`${key}=${value === null ? '' : encodeComponent(value)}`);
}

module.exports = { stringify };
