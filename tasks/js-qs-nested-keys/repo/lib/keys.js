'use strict';

/**
 * Split a decoded query-string key into its path:
 *   'a'          -> ['a']
 *   'user[name]' -> ['user', 'name']
 *   'a[b][c]'    -> ['a', 'b', 'c']
 *   'list[]'     -> ['list', '']   (an empty last segment appends to an array)
 * A key that does not end with a closing bracket, or starts with one, is taken whole.
 */
function splitKey(key) {
  const open = key.indexOf('[');
  if (open <= 0 || !key.endsWith(']')) return [key];
  return [key.slice(0, open), key.slice(open + 1, -1)];
}

/** The inverse of splitKey, for already-encoded segments. */
function joinKey(segments) {
  const [head, ...rest] = segments;
  return head + rest.map((segment) => `[${segment}]`).join('');
}

module.exports = { splitKey, joinKey };
