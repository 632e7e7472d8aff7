// The records reporter of `node --test` (`--test-reporter PATH`): node loads it in the parent
// process before any test file's child starts, so the channel is opened (and CODE_GYM_RECORDS
// removed) before test code runs. Runs inside the sandbox: node 18+, no dependency.
//
// node reports each file's tests in the order they are defined: "test:start" opens a test at its
// nesting level, "test:pass"/"test:fail" closes it. A test with subtests, like a describe block, is
// a suite (node's junit report shows both as <testsuite>); only leaves are tests. A failing suite
// or file with no failing test under it (a hook, an exit code, a file that throws at load) gives
// the file a collect record, so that the end status equals node's exit code.
//
// A file's results reach the parent as frames on that file's stdout, which code in the file's
// process can write too: forged "test:pass" frames for a test that then fails for real. So the
// reports are held until the run ends: a title reported in one file as passed and as failed is
// failed in every report of it (a patch that breaks one of two tests of one title fails both), and
// the tests of a file that failed with none of them failing (it threw at load after printing frames,
// a hook failed, it exited non-zero) are failed: such a file vouches for none of its passes.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const channel = require('./channel.cjs').open();

const STDERR = 2000; // characters of a file's stderr kept for its collect message

function isFileLevel(data) {
  return data.nesting === 0 && typeof data.name === 'string' && path.resolve(data.name) === data.file;
}

/** The open tests of one file by nesting level, its stderr, its failures and its held records. */
function fileState(files, file) {
  if (!files.has(file)) files.set(file, { open: [], stderr: '', failures: 0, held: [] });
  return files.get(file);
}

function onStart(state, data) {
  state.open.length = data.nesting;
  if (data.nesting > 0 && state.open[data.nesting - 1]) state.open[data.nesting - 1].parent = true;
  state.open.push({ name: data.name, parent: false, failuresBefore: state.failures });
}

function onEnd(state, data, passed) {
  const node = state.open[data.nesting] || { name: data.name, parent: false, failuresBefore: 0 };
  const names = state.open.slice(0, data.nesting).map((open) => open.name).concat(data.name);
  state.open.length = data.nesting;
  const details = data.details || {};
  const suite = node.parent || details.type === 'suite' || isFileLevel(data);
  if (!suite) {
    const outcome = data.skip || data.todo ? 'skipped' : passed ? 'passed' : 'failed';
    if (outcome === 'failed') state.failures += 1;
    state.held.push({ kind: 'report', names, outcome, error: details.error, seconds: (details.duration_ms || 0) / 1000 });
  } else if (!passed && state.failures === (isFileLevel(data) ? 0 : node.failuresBefore)) {
    const error = isFileLevel(data) && state.stderr ? state.stderr.trim() : details.error;
    state.failures += 1;
    state.held.push({ kind: 'collect', error: error || `${names.join(' > ')} failed` });
  }
}

/** The held records of one file: a title reported with both outcomes, and every test of a file
 * with a collect record, failed. */
function release(file, state) {
  const broken = state.held.some((item) => item.kind === 'collect');
  const outcomes = new Map();
  for (const item of state.held) {
    if (item.kind !== 'report' || item.outcome === 'skipped') continue;
    const key = item.names.join('\0');
    outcomes.set(key, (outcomes.get(key) || new Set()).add(item.outcome));
  }
  for (const item of state.held) {
    if (item.kind === 'collect') {
      channel.collect(file, item.error);
    } else if (item.outcome === 'passed' && broken) {
      channel.report(file, item.names, 'failed', 'its file failed after it passed', item.seconds);
    } else if ((outcomes.get(item.names.join('\0')) || new Set()).size > 1) {
      channel.report(file, item.names, 'failed', item.error || 'this title was also reported as failed', item.seconds);
    } else {
      channel.report(file, item.names, item.outcome, item.error, item.seconds);
    }
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
  for (const [file, state] of files) release(file, state);
  channel.end(channel.status());
}
