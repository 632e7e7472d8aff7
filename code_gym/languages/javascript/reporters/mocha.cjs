'use strict';
// The grader's mocha driver: `node mocha.cjs '{"files": [...], "args": [...], "keepGoing": bool}'`.
// Runs inside the sandbox (node 18+, no dependency but the project's mocha, 8 or later: checked with
// 8.4 and 12).
//
// It opens the results channel first, then runs the project's mocha through its API, as mocha's
// command line would (the options of `args`, .mocharc and package.json's "mocha", --require'd
// plugins and --file setup files) with two differences: each test file is loaded on its own, so a
// file that throws at load is a collect record and the others still run; and mocha's own reporter
// is spec plus the records. A failing hook fails the tests it kept from running (mocha reports only
// the hook); a failure that no test is left to carry (an after hook, an error after a test ended)
// is a collect record for its file. The exit code is the end record's status: 0 or 1.
const channel = require('./channel.cjs').open();
const path = require('path');
const { importOrRequire, resolveFromProject } = require('./channel.cjs');

/** mocha's command-line option reader: lib/cli/*.cjs since mocha 11, *.js before. */
function cliModule(root, name) {
  for (const suffix of ['.cjs', '.js']) {
    try {
      return require(path.join(root, 'lib', 'cli', name + suffix));
    } catch (error) {
      if (error.code !== 'MODULE_NOT_FOUND') throw error;
    }
  }
  throw new Error(`mocha in ${root} has no lib/cli/${name}: the grader's driver needs mocha 8 or later`);
}

/** The options mocha's command line would run with, its --require'd plugins (root hooks) included. */
async function mochaOptions(root, args) {
  const options = cliModule(root, 'options').loadOptions(args);
  const plugins = await cliModule(root, 'run-helpers').handleRequires(options.require);
  return Object.assign(options, plugins);
}

/** The titles of a test's suites and its own, outermost first (the root suite has none). */
function titles(test) {
  const names = [];
  for (let node = test; node && !node.root; node = node.parent) names.unshift(node.title);
  return names;
}

/** Every test under `suite`, nested suites included. */
function testsUnder(suite) {
  return suite.tests.concat(...suite.suites.map(testsUnder));
}

/** The reporter: mocha's spec output, and one record per test. */
function recordsReporter(Mocha) {
  return class Records extends Mocha.reporters.Spec {
    constructor(runner, options) {
      super(runner, options);
      const reported = new Set();
      let lastFile = null;
      const record = (test, outcome, error) => {
        reported.add(test);
        lastFile = test.file || lastFile;
        channel.report(test.file || lastFile, titles(test), outcome, error, (test.duration || 0) / 1000);
      };
      runner.on('pass', (test) => reported.has(test) || record(test, 'passed'));
      runner.on('pending', (test) => reported.has(test) || record(test, 'skipped'));
      runner.on('fail', (runnable, error) => {
        if (runnable.type === 'test' && !reported.has(runnable)) return record(runnable, 'failed', error);
        const kept = runnable.type === 'test' ? [] : testsUnder(runnable.parent).filter((t) => !reported.has(t));
        const message = `${runnable.title}: ${error && error.message}`;
        if (kept.length) kept.forEach((test) => record(test, 'failed', message));
        else channel.collect(runnable.file || lastFile || runnable.title, message);
      });
    }
  };
}

/** Load one file as mocha's loadFiles does; a file that throws leaves no tests behind and a collect record. */
async function load(mocha, file) {
  const suite = mocha.suite;
  const suites = suite.suites.length;
  const tests = suite.tests.length;
  const absolute = path.resolve(file);
  suite.emit('pre-require', global, absolute, mocha);
  try {
    suite.emit('require', await importOrRequire(absolute), absolute, mocha);
    suite.emit('post-require', global, absolute, mocha);
  } catch (error) {
    suite.suites.length = suites;
    suite.tests.length = tests;
    console.error(`${file} failed to load:`, error);
    channel.collect(absolute, error);
  }
}

/** Write the end record and exit with its status once mocha's run is over. */
function finish(options) {
  return () => {
    const status = channel.status();
    channel.end(status);
    process.exitCode = status;
    if (options.exit) process.stdout.write('', () => process.exit(status));
  };
}

async function main(spec) {
  const { files, args, keepGoing } = JSON.parse(spec);
  const entry = resolveFromProject('mocha');
  const exported = await importOrRequire(entry); // mocha 12's entry is an ES module: its namespace
  const Mocha = typeof exported === 'function' ? exported : exported.default || exported.Mocha;
  const options = await mochaOptions(path.dirname(entry), args);
  // the records reporter replaces the configured one, which need not even be installed
  const settings = Object.assign({}, options, { parallel: false, watch: false, reporter: undefined });
  if (keepGoing) settings.bail = false;
  const mocha = new Mocha(settings);
  mocha.reporter(recordsReporter(Mocha), options.reporterOption || options.reporterOptions);
  for (const file of [].concat(options.file || [], files)) await load(mocha, file);
  mocha.run(finish(options));
}

main(process.argv[2]).catch((error) => {
  console.error('the grader\'s mocha driver failed:', error);
  process.exitCode = 2;
});
