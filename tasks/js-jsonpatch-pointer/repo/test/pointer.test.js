'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { get, has, parsePointer, compilePointer, PointerError } = require('../lib');

const doc = { users: [{ name: 'ann', tags: ['admin'] }, { name: 'bob' }], 'a/b': 1, 'm~n': 2, '': 3 };

test('get walks objects and arrays', () => {
  assert.equal(get(doc, '/users/0/name'), 'ann');
  assert.equal(get(doc, '/users/0/tags/0'), 'admin');
  assert.equal(get(doc, ''), doc);
  assert.equal(get(doc, '/'), 3);
});

test('escaped slash and tilde in a token', () => {
  assert.equal(get(doc, '/a~1b'), 1);
  assert.equal(get(doc, '/m~0n'), 2);
  assert.deepEqual(parsePointer('/a~1b/m~0n'), ['a/b', 'm~n']);
});

test('compilePointer escapes its tokens', () => {
  assert.equal(compilePointer(['a/b', 'm~n', 0]), '/a~1b/m~0n/0');
  assert.equal(compilePointer([]), '');
});

test('pointers to nothing throw PointerError', () => {
  assert.throws(() => get(doc, '/users/2'), PointerError);
  assert.throws(() => get(doc, '/users/01'), PointerError);
  assert.throws(() => get(doc, 'users'), PointerError);
  assert.equal(has(doc, '/users/1/name'), true);
  assert.equal(has(doc, '/users/1/tags'), false);
});
