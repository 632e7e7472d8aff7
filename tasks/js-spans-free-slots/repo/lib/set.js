'use strict';

const { overlaps } = require('./interval');

/** The union of `intervals` as sorted, disjoint, non-touching intervals (empty ones dropped). */
function merge(intervals) {
  const sorted = intervals
    .filter((span) => span.end > span.start)
    .map((span) => ({ start: span.start, end: span.end }))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const result = [];
  for (const span of sorted) {
    const last = result[result.length - 1];
    if (last && span.start < last.end) {
      last.end = Math.max(last.end, span.end);
    } else {
      result.push(span);
    }
  }
  return result;
}

/** The parts of `from` that lie outside every interval of `holes`, sorted. */
function subtract(from, holes) {
  let pieces = from.end > from.start ? [{ start: from.start, end: from.end }] : [];
  for (const hole of merge(holes)) {
    const next = [];
    for (const piece of pieces) {
      if (!overlaps(piece, hole)) {
        next.push(piece);
      } else if (piece.start < hole.start) {
        next.push({ start: piece.start, end: hole.start });
      } else if (hole.end < piece.end) {
        next.push({ start: hole.end, end: piece.end });
      }
    }
    pieces = next;
  }
  return pieces;
}

module.exports = { merge, subtract };
