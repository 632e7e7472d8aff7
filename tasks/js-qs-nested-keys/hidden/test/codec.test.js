'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { parse, stringify } = require('../lib');

test('plus signs decode to spaces', () => {
  assert.deepEqual(parse('q=fish+and+chips&sum=1%2B1'), { q: 'fish and chips', sum: '1+1' });
  assert.deepEqual(parse('first+name=Ann'), { 'first name': 'Ann' });
});

test('brackets nest to any depth', () => {
  assert.deepEqual(parse('a[b][c]=1&a[b][d]=2&m[tags][]=x&m[tags][]=y'), {
    a: { b: { c: '1', d: '2' } },
    m: { tags: ['x', 'y'] },
  });
});

test('reserved characters in keys and values are escaped', () => {
  assert.equal(
    stringify({ q: 'fish & chips', eq: 'a=b', sum: '1+1', 'a&b': 'c#d' }),
    'q=fish%20%26%20chips&eq=a%3Db&sum=1%2B1&a%26b=c%23d',
  );
});

test('nested data survives a round trip', () => {
  const data = { filter: { tags: ['a b', 'c&d', '1+1'], owner: { id: '7' } }, page: '2' };
  assert.deepEqual(parse(stringify(data)), data);
});

test('malformed escapes are kept as they are', () => {
  assert.deepEqual(parse('a=100%&b=%zz'), { a: '100%', b: '%zz' });
});
