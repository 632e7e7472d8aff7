'use strict';

const test = require('tape');
const { interval, freeSlots, parseTime, formatTime, formatSlot } = require('../lib');

const day = interval(parseTime('09:00'), parseTime('17:00'));

test('parseTime and formatTime', (t) => {
  t.equal(parseTime('09:30'), 570);
  t.equal(formatTime(570), '09:30');
  t.equal(formatTime(24 * 60), '24:00');
  t.throws(() => parseTime('9:30'), SyntaxError);
  t.throws(() => parseTime('24:00'), SyntaxError);
  t.end();
});

test('a day without meetings is one free slot', (t) => {
  t.deepEqual(freeSlots(day, []).map(formatSlot), ['09:00-17:00']);
  t.end();
});

test('freeSlots leaves out slots shorter than minLength', (t) => {
  const busy = [interval(parseTime('08:00'), parseTime('16:40'))];
  t.deepEqual(freeSlots(day, busy, { minLength: 30 }).map(formatSlot), []);
  t.deepEqual(freeSlots(day, busy, { minLength: 15 }).map(formatSlot), ['16:40-17:00']);
  t.end();
});
