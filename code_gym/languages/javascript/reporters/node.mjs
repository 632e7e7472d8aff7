// The records reporter of `node --test` (`--test-reporter PATH`): node loads it in the parent
// process before any test file's child starts, so the channel is opened (and CODE_GYM_RECORDS
// removed) before test code runs. Runs inside the sandbox: node 18+, no dependency.
//
// node reports each file's tests in the order they are defined: "test:start" opens a test at its
// nesting level, "test:pass"/"test:fail" closes it. A test with subtests, like a describe block, is
// a suite (node's junit report shows both as <testsuite>); only leaves are tests. A failing suite
// or file with no failing test under it (a hook, an exit code, a file that throws at load) gives
// the file a collect record, so that the end status equals node's exit code.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const channel = require('./channel.cjs').open();

const STDERR = 2000; // characters of a file's stderr kept for its collect message

/** The open tests of one file, by nesting level, and what the file printed on stderr. */
function fileState(files, file) {
  if (!files.has(file)) files.set(file, { open: [], stderr: '' });
  return files.get(file);
}

function isFileLevel(data) {
  return data.nesting === 0 && typeof data.name === 'string' && path.resolve(data.name) === data.file;
}

function onStart(state, data) {
  state.open.length = data.nesting;
  if (data.nesting > 0 && state.open[data.nesting - 1]) state.open[data.nesting - 1].parent = true;
  state.open.push({ name: data.name, parent: false, failuresBefore: channel.failuresIn(data.file) });
}

function onEnd(state, data, passed) {
  const node = state.open[data.nesting] || { name: data.name, parent: false, failuresBefore: 0 };
  const names = state.open.slice(0, data.nesting).map((open) => open.name).concat(data.name);
  state.open.length = data.nesting;
  const details = data.details || {};
  const suite = node.parent || details.type === 'suite' || isFileLevel(data);
  if (!suite) {
    const outcome = data.skip || data.todo ? 'skipped' : passed ? 'passed' : 'failed';
    channel.report(data.file, names, outcome, details.error, (details.duration_ms || 0) / 1000);
  } else if (!passed && channel.failuresIn(data.file) === (isFileLevel(data) ? 0 : node.failuresBefore)) {
    const error = isFileLevel(data) && state.stderr ? state.stderr.trim() : details.error;
    channel.collect(data.file, error || `${names.join(' > ')} failed`);
  }
}

export default async function* records(source) {
  const files = new Map();
  for await (const event of source) {
    const data = event.data || {};
    if (typeof data.file !== 'string') continue;
    const state = fileState(files, data.file);
    if (event.type === 'test:start') onStart(state, data);
    else if (event.type === 'test:pass' || event.type === 'test:fail') onEnd(state, data, event.type === 'test:pass');
    else if (event.type === 'test:stderr' && state.stderr.length < STDERR) state.stderr += data.message;
  }
  channel.end(channel.status());
}
