'use strict';
// The records reporter of jest (`--reporters default --reporters PATH`). Runs inside the sandbox
// (node 18+, no dependency; checked with jest 27 and 30). jest loads its reporters in its parent
// process before it starts test workers or runs a file in band, so the channel is opened (and
// CODE_GYM_RECORDS removed) before test code runs.
//
// A test file's results arrive when the file is done: one record per test (ids from its describe
// titles and its own), and a collect record when the file itself failed (it threw at load, holds
// no test, or an afterAll hook failed). The end record's status is jest's exit code: 1 when a
// test or file failed or the snapshots do (`--ci`), else 0.
const channel = require('./channel.cjs').open();

const OUTCOMES = { passed: 'passed', failed: 'failed' }; // pending, todo, skipped, disabled: skipped

class Records {
  onTestResult(test, result) {
    for (const each of result.testResults || []) {
      const outcome = OUTCOMES[each.status] || 'skipped';
      const error = outcome === 'failed' ? (each.failureMessages || [])[0] || 'failed' : undefined;
      const seconds = typeof each.duration === 'number' ? each.duration / 1000 : undefined;
      channel.report(result.testFilePath, (each.ancestorTitles || []).concat(each.title), outcome, error, seconds);
    }
    if (result.testExecError) channel.collect(result.testFilePath, result.testExecError.message || result.failureMessage);
  }

  /** jest sets `results.success` after its reporters are done: what it is made of, then. */
  onRunComplete(contexts, results) {
    const failed = results.numFailedTests > 0 || results.numRuntimeErrorTestSuites > 0
      || Boolean(results.snapshot && results.snapshot.failure);
    channel.end(failed || channel.status() === 1 ? 1 : 0);
  }

  getLastError() {
    return undefined;
  }
}

module.exports = Records;
