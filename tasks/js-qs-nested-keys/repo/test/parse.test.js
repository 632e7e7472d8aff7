'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { parse } = require('../lib');

test('parses flat pairs', () => {
  assert.deepEqual(parse('a=1&b=two'), { a: '1', b: 'two' });
});

test('ignores a leading question mark and empty parts', () => {
  assert.deepEqual(parse('?a=1&&b=&flag'), { a: '1', b: '', flag: '' });
});

test('decodes percent escapes as UTF-8', () => {
  assert.deepEqual(parse('city=S%C3%A3o%20Paulo'), { city: 'São Paulo' });
});

test('collects repeated keys and bracket arrays', () => {
  assert.deepEqual(parse('t=x&t=y&list[]=a&list[]=b'), { t: ['x', 'y'], list: ['a', 'b'] });
});

test('nests one level of brackets', () => {
  assert.deepEqual(parse('user[name]=ann&user[role]=admin'), { user: { name: 'ann', role: 'admin' } });
});

test('uses a custom delimiter', () => {
  assert.deepEqual(parse('a=1;b=2', { delimiter: ';' }), { a: '1', b: '2' });
});
