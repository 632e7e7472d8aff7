'use strict';

/** A half-open interval [start, end). */
function interval(start, end) {
  if (!Number.isFinite(start) || !Number.isFinite(end)) {
    throw new TypeError(`interval bounds must be finite numbers, got ${start} and ${end}`);
  }
  if (end < start) throw new RangeError(`interval ends (${end}) before it starts (${start})`);
  return { start, end };
}

/** Whether a and b share at least one point. */
function overlaps(a, b) {
  return a.start < b.end && b.start < a.end;
}

/** Whether a and b overlap or one ends where the other starts. */
function touches(a, b) {
  return a.start <= b.end && b.start <= a.end;
}

function length(a) {
  return a.end - a.start;
}

module.exports = { interval, overlaps, touches, length };
