'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { get, parsePointer, compilePointer, applyPatch, PatchError } = require('../lib');

test('~01 is the key ~1, not a slash', () => {
  const doc = { '~1': 'tilde-one', '/': 'slash' };
  assert.equal(get(doc, '/~01'), 'tilde-one');
  const tokens = ['~1', 'a/b', '~', '~0/'];
  assert.deepEqual(parsePointer(compilePointer(tokens)), tokens);
});

test('add inserts into an array before the index', () => {
  assert.deepEqual(applyPatch({ list: ['a', 'c'] }, [{ op: 'add', path: '/list/1', value: 'b' }]), { list: ['a', 'b', 'c'] });
  assert.deepEqual(applyPatch([2, 3], [{ op: 'add', path: '/0', value: 1 }]), [1, 2, 3]);
  assert.throws(() => applyPatch([1], [{ op: 'add', path: '/3', value: 0 }]), PatchError);
});

test('replace and move keep the other array elements', () => {
  assert.deepEqual(applyPatch({ list: ['a', 'x', 'c'] }, [{ op: 'replace', path: '/list/1', value: 'b' }]), { list: ['a', 'b', 'c'] });
  assert.deepEqual(applyPatch({ list: [1, 2, 3, 4] }, [{ op: 'move', from: '/list/0', path: '/list/2' }]), { list: [2, 3, 1, 4] });
});

test('test compares arrays and objects by their whole contents', () => {
  const doc = { tags: ['a'], meta: { v: 1 } };
  assert.throws(() => applyPatch(doc, [{ op: 'test', path: '/tags', value: ['a', 'b'] }]), PatchError);
  assert.throws(() => applyPatch(doc, [{ op: 'test', path: '/meta', value: { v: 1, w: 2 } }]), PatchError);
  assert.deepEqual(applyPatch(doc, [{ op: 'test', path: '/meta', value: { v: 1 } }]), doc);
});

test('move and copy between objects', () => {
  const result = applyPatch({ a: { x: 1 }, b: {} }, [
    { op: 'copy', from: '/a/x', path: '/b/y' },
    { op: 'move', from: '/a', path: '/b/a' },
  ]);
  assert.deepEqual(result, { b: { y: 1, a: { x: 1 } } });
  assert.throws(() => applyPatch({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }]), PatchError);
});

test('a failed patch reports the failing operation', () => {
  const doc = { a: 1 };
  assert.throws(
    () => applyPatch(doc, [{ op: 'add', path: '/b', value: 2 }, { op: 'remove', path: '/missing' }]),
    (err) => err instanceof PatchError && err.index === 1,
  );
  assert.deepEqual(doc, { a: 1 });
});
