'use strict';
// The grader's results channel, shared by the reporters and drivers in this folder, and how the
// drivers find the project's runner and load its test files. Runs inside the sandbox: node 18+, no
// dependency. `open()` must run before any code of the project does.
//
// CODE_GYM_RECORDS ("FD NONCE") names the channel's write end. `open` removes the variable, reopens
// the descriptor through /proc (node opens every file close-on-exec, so no child process inherits
// the new one) and closes FD, so the test code's children get nothing and the test process keeps
// only the close-on-exec copy. Each record is one JSON line, written with one write(2). The
// functions that write are taken when this module loads, before test code can replace them.
const fs = require('fs');
const path = require('path');
const { fileURLToPath, pathToFileURL } = require('url');

const writeSync = fs.writeSync;
const openSync = fs.openSync;
const closeSync = fs.closeSync;
const realpathSync = fs.realpathSync;
const stringify = JSON.stringify;
const assign = Object.assign;
const toBytes = Buffer.from.bind(Buffer);
const MESSAGE = 500; // characters of a failure message a record carries

/** A writer of records: the descriptor and nonce live in this closure only. */
function writer(fd, nonce) {
  let seq = 0;
  let closed = fd === null;
  return {
    write(kind, fields) {
      if (closed) return;
      const line = toBytes(stringify(assign({ nonce, seq, kind }, fields)) + '\n');
      seq += 1;
      for (let done = 0; done < line.length;) done += writeSync(fd, line, done);
    },
    close() {
      if (!closed) closeSync(fd);
      closed = true;
    },
  };
}

/** The repo-relative POSIX path of a test file: node and mocha give absolute paths (node 18 a file
 * URL for an ES module), jest real paths. */
function relativeFile(file) {
  if (file.startsWith('file:')) return relativeFile(fileURLToPath(file));
  if (!path.isAbsolute(file)) return file.split(path.sep).join('/');
  let relative = path.relative(process.cwd(), file);
  if (relative.startsWith('..')) relative = path.relative(realpathSync(process.cwd()), file);
  return relative.split(path.sep).join('/');
}

/** A failure message cut to what a record carries. */
function messageOf(error) {
  const text = error && typeof error === 'object' ? String(error.message || error) : String(error);
  return text.slice(0, MESSAGE);
}

/**
 * The run's records: "start" when opened, one "report" per test (ids "FILE::A > B", a repeated id
 * suffixed " [2]", " [3]", ...), "collect" for a file whose failure is no test's, and "end" with
 * the run's status (1 when any test or file failed). Without CODE_GYM_RECORDS it writes nothing
 * but still keeps the status.
 */
function open() {
  const settings = (process.env.CODE_GYM_RECORDS || '').split(' ');
  delete process.env.CODE_GYM_RECORDS;
  let fd = null;
  if (settings.length === 2) {
    fd = openSync('/proc/self/fd/' + settings[0], 'a');
    closeSync(Number(settings[0]));
  }
  const out = writer(fd, settings[1]);
  const seen = new Map(); // id -> how many times reported
  const failures = new Map(); // file -> failed tests and collect records
  let ended = false;
  const failed = (file) => failures.set(file, (failures.get(file) || 0) + 1);
  out.write('start', {});
  return {
    report(file, names, outcome, error, seconds) {
      if (ended) return;
      const base = relativeFile(file) + '::' + names.join(' > ');
      const count = (seen.get(base) || 0) + 1;
      seen.set(base, count);
      const fields = { id: count > 1 ? base + ' [' + count + ']' : base, when: 'call', outcome };
      if (outcome === 'failed') {
        failed(relativeFile(file));
        if (error !== undefined) fields.message = messageOf(error);
      }
      if (typeof seconds === 'number' && isFinite(seconds)) fields.duration = seconds;
      out.write('report', fields);
    },
    collect(file, error) {
      if (ended) return;
      failed(relativeFile(file));
      out.write('collect', { id: relativeFile(file), outcome: 'failed', message: messageOf(error) });
    },
    /** Failed tests and collect records of `file` so far. */
    failuresIn(file) {
      return failures.get(relativeFile(file)) || 0;
    },
    status() {
      return failures.size > 0 ? 1 : 0;
    },
    end(status) {
      if (ended) return;
      ended = true;
      out.write('end', { exitstatus: status });
      out.close();
    },
    get ended() {
      return ended;
    },
  };
}

/** Where a package the project installed lives: resolved from the repository, then NODE_PATH. */
function resolveFromProject(name) {
  const dirs = (process.env.NODE_PATH || '').split(path.delimiter).filter(Boolean);
  return require.resolve(name, { paths: [process.cwd(), ...dirs] });
}

/** A test file's module: CommonJS through require, an ES module through import (which node's
 * require refuses before node 22, and after it when the module awaits at its top level). */
async function importOrRequire(file) {
  const esm = ['ERR_REQUIRE_ESM', 'ERR_REQUIRE_ASYNC_MODULE'];
  if (file.endsWith('.mjs')) return import(pathToFileURL(file).href);
  try {
    return require(file);
  } catch (error) {
    if (error && esm.includes(error.code)) return import(pathToFileURL(file).href);
    throw error;
  }
}

module.exports = { open, relativeFile, messageOf, resolveFromProject, importOrRequire };
