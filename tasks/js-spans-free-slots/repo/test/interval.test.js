'use strict';

const test = require('tape');
const { interval, overlaps, touches, length, merge, subtract } = require('../lib');

test('interval checks its bounds', (t) => {
  t.deepEqual(interval(1, 3), { start: 1, end: 3 });
  t.equal(length(interval(4, 4)), 0);
  t.throws(() => interval(3, 1), RangeError);
  t.throws(() => interval(0, Infinity), TypeError);
  t.end();
});

test('overlaps and touches at the edges', (t) => {
  t.equal(overlaps(interval(1, 3), interval(2, 5)), true);
  t.equal(overlaps(interval(1, 3), interval(3, 5)), false);
  t.equal(touches(interval(1, 3), interval(3, 5)), true);
  t.equal(touches(interval(1, 3), interval(4, 5)), false);
  t.end();
});

test('merge joins overlapping intervals in order', (t) => {
  const spans = [interval(50, 60), interval(10, 30), interval(20, 40), interval(25, 35)];
  t.deepEqual(merge(spans), [{ start: 10, end: 40 }, { start: 50, end: 60 }]);
  t.end();
});

test('merge drops empty intervals and leaves its input alone', (t) => {
  const spans = [interval(5, 5), interval(1, 4), interval(2, 3)];
  t.deepEqual(merge(spans), [{ start: 1, end: 4 }]);
  t.deepEqual(spans, [{ start: 5, end: 5 }, { start: 1, end: 4 }, { start: 2, end: 3 }]);
  t.end();
});

test('subtract cuts holes off either end', (t) => {
  t.deepEqual(subtract(interval(0, 100), [interval(80, 120)]), [{ start: 0, end: 80 }]);
  t.deepEqual(subtract(interval(0, 100), [interval(-10, 30)]), [{ start: 30, end: 100 }]);
  t.deepEqual(subtract(interval(0, 100), [interval(0, 100)]), []);
  t.deepEqual(subtract(interval(0, 100), []), [{ start: 0, end: 100 }]);
  t.end();
});
