'use strict';

/**
 * Decode one key or value of a query string (application/x-www-form-urlencoded):
 * `+` stands for a space and percent escapes are UTF-8. A malformed escape is
 * kept as it is rather than throwing.
 */
function decodeComponent(text) {
  try {
    return decodeURIComponent(text);
  } catch (err) {
    if (err instanceof URIError) return text;
    throw err;
  }
}

module.exports = { decodeComponent };
