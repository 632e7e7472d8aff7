'use strict';

const assert = require('node:assert/strict');
const { stringify } = require('../lib');

describe('stringify', () => {
  it('joins fields and rows', () => {
    assert.equal(stringify([['a', 'b'], [1, 2]]), 'a,b\n1,2\n');
    assert.equal(stringify([['a', 'b']], { delimiter: ';', eol: '\r\n' }), 'a;b\r\n');
  });

  it('quotes fields holding the delimiter or a line break', () => {
    assert.equal(stringify([['a, b', 'x\ny', 'plain']]), '"a, b","x\ny",plain\n');
  });

  it('writes null and undefined as empty fields', () => {
    assert.equal(stringify([[null, undefined, 0]]), ',,0\n');
  });
});
