'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { stringify } = require('../lib');

test('writes flat pairs', () => {
  assert.equal(stringify({ a: 1, b: 'x y' }), 'a=1&b=x%20y');
});

test('writes arrays in each format', () => {
  const data = { n: [1, 2] };
  assert.equal(stringify(data), 'n[]=1&n[]=2');
  assert.equal(stringify(data, { arrayFormat: 'indices' }), 'n[0]=1&n[1]=2');
  assert.equal(stringify(data, { arrayFormat: 'repeat' }), 'n=1&n=2');
});

test('writes nested objects as bracket keys, skips undefined', () => {
  assert.equal(stringify({ user: { name: 'ann', age: undefined, nick: null } }), 'user[name]=ann&user[nick]=');
});
