'use strict';

const { length } = require('./interval');
const { subtract } = require('./set');

const TIME = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;

/** Minutes since midnight of an 'HH:MM' time. */
function parseTime(text) {
  const match = TIME.exec(text);
  if (!match) throw new SyntaxError(`not a time of day: ${JSON.stringify(text)}`);
  return Number(match[1]) * 60 + Number(match[2]);
}

/** 'HH:MM' for minutes since midnight (24:00 for the end of the day). */
function formatTime(minutes) {
  const hours = Math.floor(minutes / 60);
  return `${String(hours).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

function formatSlot(slot) {
  return `${formatTime(slot.start)}-${formatTime(slot.end)}`;
}

/** The free parts of `day` around the `busy` intervals, each at least `minLength` long. */
function freeSlots(day, busy, { minLength = 0 } = {}) {
  return subtract(day, busy).filter((slot) => length(slot) > minLength);
}

module.exports = { parseTime, formatTime, formatSlot, freeSlots };
