'use strict';

/** Write rows (arrays of values) as CSV text (see the README). */
function stringify(rows, options = {}) {
  const delimiter = options.delimiter || ',';
  const eol = options.eol || '\n';
  return rows.map((row) => row.map((value) => formatField(value, delimiter)).join(delimiter) + eol).join('');
}

/** One field: empty for null/undefined, quoted when it holds the delimiter, a quote or a line break. */
function formatField(value, delimiter) {
  const text = value == null ? '' : String(value);
  const special = text.includes(delimiter) || /["\r\n]/.test(text);
  return special ? `"${text}"` : text;
}

module.exports = { stringify };
