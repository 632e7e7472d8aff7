'use strict';

/** Parse CSV text into rows of strings, or objects with `header: true` (see the README). */
function parse(text, options = {}) {
  const delimiter = options.delimiter || ',';
  if (delimiter.length !== 1 || delimiter === '"' || delimiter === '\n' || delimiter === '\r') {
    throw new TypeError(`unusable delimiter ${JSON.stringify(delimiter)}`);
  }
  const rows = tokenize(String(text), delimiter);
  return options.header ? toObjects(rows) : rows;
}

/** Split text into rows of fields, honouring quoted fields. */
function tokenize(text, delimiter) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        quoted = false;
      } else {
        field += ch;
      }
      i += 1;
      continue;
    }
    if (ch === '"' && field === '') {
      quoted = true;
    } else if (ch === delimiter) {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      if (ch === '\r' && text[i + 1] === '\n') i += 1;
    } else {
      field += ch;
    }
    i += 1;
  }
  if (quoted) throw new SyntaxError('unterminated quoted field at the end of the input');
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** Rows as objects keyed by the first row; missing trailing fields are ''. */
function toObjects(rows) {
  const [names = [], ...records] = rows;
  return records.map((record) => Object.fromEntries(names.map((name, i) => [name, record[i] ?? ''])));
}

module.exports = { parse };
