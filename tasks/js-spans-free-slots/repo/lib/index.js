'use strict';

const { interval, overlaps, touches, length } = require('./interval');
const { merge, subtract } = require('./set');
const { freeSlots, parseTime, formatTime, formatSlot } = require('./calendar');

module.exports = { interval, overlaps, touches, length, merge, subtract, freeSlots, parseTime, formatTime, formatSlot };
