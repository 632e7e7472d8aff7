'use strict';

class PointerError extends Error {
  constructor(message) {
    super(message);
    this.name = 'PointerError';
  }
}

class PatchError extends Error {
  constructor(message, index) {
    super(index === undefined ? message : `operation ${index}: ${message}`);
    this.name = 'PatchError';
    this.index = index;
  }
}

module.exports = { PointerError, PatchError };
