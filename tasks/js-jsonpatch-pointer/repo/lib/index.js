'use strict';

const { PointerError, PatchError } = require('./errors');
const { parsePointer, compilePointer, get, has } = require('./pointer');
const { applyPatch } = require('./patch');
const { deepEqual } = require('./equal');

module.exports = { parsePointer, compilePointer, get, has, applyPatch, deepEqual, PointerError, PatchError };
