'use strict';
// The grader's tape driver: `node tape.cjs '{"files": [...], "args": [...]}'` (args: tape's
// `-r/--require MODULE`). Runs inside the sandbox (node 18+, no dependency but the project's tape:
// checked with 4.17 and 5.10; test files that are ES modules need the harness's wait(), tape 5.3+).
//
// It opens the results channel first, takes tape's default harness (the one test files get from
// `require('tape')`) without its exit handler, loads each test file on its own and watches every
// test it defines: a test fails when any of its assertions fails (a todo test's never count), and
// its record is written once its last assertion is in (tape checks a plan right after the end). A
// test that throws, synchronously or from a callback while it runs, fails and ends, as a failing
// assertion would, instead of ending the process. A file that throws at load is a collect record
// and defines no test; an assertion failing after its test's record is a collect record. The
// process exits with the end record's status; on exit, tests still open fail as tape fails them.
const channel = require('./channel.cjs').open();
const path = require('path');
const { importOrRequire, resolveFromProject } = require('./channel.cjs');

const now = Date.now;

/** The modules of `-r/--require` options, resolved from the repository; other options are refused. */
function requiredModules(args) {
  const modules = [];
  for (let i = 0; i < args.length; i += 1) {
    if (args[i] === '-r' || args[i] === '--require') modules.push(args[(i += 1)]);
    else if (args[i].startsWith('--require=')) modules.push(args[i].slice('--require='.length));
    else throw new Error(`tape option ${args[i]} is not supported by the grader's driver (only -r/--require)`);
  }
  return modules.map((name) => resolveFromProject(name.startsWith('.') ? path.resolve(name) : name));
}

/** Each test's file, titles and first failure; the tests running now, innermost last. */
class Watcher {
  constructor() {
    this.states = new Map(); // test -> { file, names, error, started }
    this.running = [];
    this.ended = []; // tests that ended and have no record yet
    this.recorded = new Set();
  }

  watch(test, file, names) {
    const state = { file, names: names.concat(test.name), error: undefined, started: now() };
    this.states.set(test, state);
    const cb = test._cb;
    if (typeof cb === 'function') test._cb = (t) => this.guarded(cb, t);
    test.on('prerun', () => this.started(test));
    test.on('result', (result) => this.result(test, result));
    test.on('test', (sub) => this.watch(sub, file, state.names));
    test.on('end', () => {
      this.running = this.running.filter((t) => t !== test);
      this.ended.push(test);
    });
  }

  guarded(cb, test) {
    try {
      return cb(test);
    } catch (error) {
      this.fail(test, error);
      return undefined;
    }
  }

  /** Fail the test with `error` and end it, as a failing assertion and t.end() would. */
  fail(test, error) {
    test.fail(String(error && error.stack ? error.stack.split('\n')[0] : error));
    if (!test.calledEnd) test.end();
  }

  started(test) {
    this.flush();
    this.states.get(test).started = now();
    this.running.push(test);
  }

  result(test, result) {
    if (!result || typeof result !== 'object' || result.ok || result.todo || test._todo) return;
    const state = this.states.get(test);
    if (this.recorded.has(test)) channel.collect(state.file, `${state.names.join(' > ')}: ${result.name}`);
    else if (state.error === undefined) state.error = result.name || 'assertion failed';
  }

  /** Write the records of the tests that ended (and, at exit, of those still running). */
  flush(all = false) {
    const done = this.ended.splice(0).concat(all ? this.running.slice().reverse() : []);
    for (const test of done) {
      if (this.recorded.has(test)) continue;
      this.recorded.add(test);
      const state = this.states.get(test);
      const outcome = test._skip || test._todo ? 'skipped' : state.error === undefined ? 'passed' : 'failed';
      channel.report(state.file, state.names, outcome, state.error, (now() - state.started) / 1000);
    }
  }

  /** The innermost test that is running, if any. */
  current() {
    return this.running[this.running.length - 1];
  }
}

/** Load one file and watch the tests it defines; a file that throws leaves none and a collect record. */
async function load(harness, watcher, file) {
  const before = harness._tests.length;
  const queued = harness._results.tests.length;
  try {
    await importOrRequire(path.resolve(file));
  } catch (error) {
    harness._tests.length = before;
    harness._results.tests.length = queued;
    console.error(`${file} failed to load:`, error);
    channel.collect(path.resolve(file), error);
    return;
  }
  for (const test of harness._tests.slice(before)) watcher.watch(test, path.resolve(file), []);
}

/** Close the run: records of ended tests, open tests failed as tape's exit handler fails them. */
function finish(harness, watcher) {
  if (channel.ended) return;
  watcher.flush();
  for (const test of watcher.running.slice().reverse()) test._exit();
  watcher.flush(true);
  harness.close();
  const status = channel.status();
  channel.end(status);
  process.exitCode = status;
}

async function main(spec) {
  const { files, args } = JSON.parse(spec);
  const tape = require(resolveFromProject('tape'));
  requiredModules(args).forEach((module) => require(module));
  if (tape.wait) tape.wait(); // tests start at harness.run(), once every file is loaded
  const harness = tape.getHarness({ exit: false }); // TAP on stdout for the agent
  const watcher = new Watcher();
  process.on('uncaughtException', (error) => {
    const test = watcher.current();
    if (!test || channel.ended) throw error;
    watcher.fail(test, error);
  });
  for (const file of files) await load(harness, watcher, file);
  harness.onFinish(() => finish(harness, watcher));
  process.on('exit', () => finish(harness, watcher));
  if (harness.run) harness.run();
}

main(process.argv[2]).catch((error) => {
  console.error('the grader\'s tape driver failed:', error);
  process.exitCode = 2;
});
