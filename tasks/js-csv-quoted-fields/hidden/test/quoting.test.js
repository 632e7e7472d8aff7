'use strict';

const assert = require('node:assert/strict');
const { parse, stringify } = require('../lib');

describe('quotes', () => {
  it('a doubled quote inside a quoted field reads as one quote', () => {
    assert.deepEqual(parse('"say ""hi""",x\n'), [['say "hi"', 'x']]);
    assert.deepEqual(parse('""""\n'), [['"']]);
    assert.deepEqual(parse('a,""\n'), [['a', '']]);
  });

  it('quotes in a field are doubled when writing', () => {
    assert.equal(stringify([['say "hi"', '12" pipe']]), '"say ""hi""","12"" pipe"\n');
  });

  it('awkward values survive a round trip', () => {
    const rows = [['id', 'text'], ['1', '"quoted", with comma'], ['2', 'two\r\nlines and ""'], ['3', '']];
    assert.deepEqual(parse(stringify(rows)), rows);
  });
});

describe('byte order mark', () => {
  it('is not part of the first field', () => {
    assert.deepEqual(parse('\uFEFFname,age\nann,31\n', { header: true }), [{ name: 'ann', age: '31' }]);
    assert.deepEqual(parse('\uFEFF"a",b'), [['a', 'b']]);
  });

  it('is kept inside the data', () => {
    assert.deepEqual(parse('a,\uFEFFb'), [['a', '\uFEFFb']]);
  });
});
