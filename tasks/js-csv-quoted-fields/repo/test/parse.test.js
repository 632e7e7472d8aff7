'use strict';

const assert = require('node:assert/strict');
const { parse } = require('../lib');

describe('parse', () => {
  it('splits rows and fields', () => {
    assert.deepEqual(parse('a,b,c\n1,2,3\n'), [['a', 'b', 'c'], ['1', '2', '3']]);
    assert.deepEqual(parse('a,,\n'), [['a', '', '']]);
  });

  it('reads quoted fields holding delimiters and line breaks', () => {
    assert.deepEqual(parse('id,note\n7,"one, two"\n8,"line 1\nline 2"'), [
      ['id', 'note'],
      ['7', 'one, two'],
      ['8', 'line 1\nline 2'],
    ]);
  });

  it('accepts CRLF line endings', () => {
    assert.deepEqual(parse('a,b\r\n1,2\r\n'), [['a', 'b'], ['1', '2']]);
  });

  it('rejects an unterminated quoted field', () => {
    assert.throws(() => parse('a,"b\n'), SyntaxError);
  });

  describe('options', () => {
    it('uses a custom delimiter', () => {
      assert.deepEqual(parse('a\tb, c\n1\t2', { delimiter: '\t' }), [['a', 'b, c'], ['1', '2']]);
    });

    it('maps rows to objects with header: true', () => {
      assert.deepEqual(parse('name,age\nann,31\nbob\n', { header: true }), [
        { name: 'ann', age: '31' },
        { name: 'bob', age: '' },
      ]);
    });
  });
});
