'use strict';

const test = require('tape');
const { interval, merge, subtract, freeSlots, parseTime, formatSlot } = require('../lib');

const at = (text) => parseTime(text);
const day = interval(at('09:00'), at('17:00'));

test('merge joins intervals that touch', (t) => {
  t.deepEqual(merge([interval(3, 5), interval(1, 3)]), [{ start: 1, end: 5 }]);
  t.deepEqual(merge([interval(60, 120), interval(90, 150), interval(150, 180)]), [{ start: 60, end: 180 }]);
  t.end();
});

test('subtract splits an interval around a hole inside it', (t) => {
  t.deepEqual(subtract(interval(0, 100), [interval(40, 60)]), [{ start: 0, end: 40 }, { start: 60, end: 100 }]);
  t.deepEqual(subtract(interval(0, 100), [interval(70, 80), interval(10, 20)]), [
    { start: 0, end: 10 },
    { start: 20, end: 70 },
    { start: 80, end: 100 },
  ]);
  t.end();
});

test('a gap exactly minLength long is a free slot', (t) => {
  const busy = [interval(at('09:00'), at('12:00')), interval(at('12:30'), at('17:00'))];
  t.deepEqual(freeSlots(day, busy, { minLength: 30 }).map(formatSlot), ['12:00-12:30']);
  t.end();
});

test('free slots around the meetings of a day', (t) => {
  const busy = [interval(at('10:00'), at('11:30')), interval(at('13:00'), at('14:00'))];
  t.deepEqual(freeSlots(day, busy, { minLength: 30 }).map(formatSlot), ['09:00-10:00', '11:30-13:00', '14:00-17:00']);
  t.end();
});

test('a meeting before the working day only delays the first slot', (t) => {
  const busy = [interval(at('08:00'), at('10:00'))];
  t.deepEqual(freeSlots(day, busy).map(formatSlot), ['10:00-17:00']);
  t.end();
});
