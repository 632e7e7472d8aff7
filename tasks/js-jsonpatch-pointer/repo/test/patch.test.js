'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { applyPatch, PatchError } = require('../lib');

test('add, replace and remove object members', () => {
  const result = applyPatch({ a: 1, b: 2 }, [
    { op: 'add', path: '/c', value: { d: 4 } },
    { op: 'replace', path: '/a', value: 10 },
    { op: 'remove', path: '/b' },
  ]);
  assert.deepEqual(result, { a: 10, c: { d: 4 } });
});

test('add with - appends to an array', () => {
  assert.deepEqual(applyPatch({ list: [1] }, [{ op: 'add', path: '/list/-', value: 2 }]), { list: [1, 2] });
});

test('the input document is not modified', () => {
  const doc = { list: [1, 2], meta: { v: 1 } };
  applyPatch(doc, [{ op: 'remove', path: '/list/0' }, { op: 'replace', path: '/meta/v', value: 2 }]);
  assert.deepEqual(doc, { list: [1, 2], meta: { v: 1 } });
});

test('a test operation with a different value fails the patch', () => {
  assert.deepEqual(applyPatch({ a: 'x' }, [{ op: 'test', path: '/a', value: 'x' }]), { a: 'x' });
  assert.throws(() => applyPatch({ a: 'x' }, [{ op: 'test', path: '/a', value: 'y' }]), PatchError);
  assert.throws(() => applyPatch({ a: 1 }, [{ op: 'test', path: '/a', value: '1' }]), PatchError);
});
