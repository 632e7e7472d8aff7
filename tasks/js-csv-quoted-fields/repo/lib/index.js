'use strict';

const { parse } = require('./parse');
const { stringify } = require('./stringify');

module.exports = { parse, stringify };
