#!/usr/bin/env node
// Check a Chrome JSON trace (`.trace.json` or gzipped `.trace.json.gz`) written
// by prof's exporter, with the trace engine of the Chrome DevTools Performance
// panel (npm @paulirish/trace_engine, pinned in package-lock.json).
//
//   node tests/interop/chrome_check/chrome_check.mjs FILE [--min-slices N]
//       [--min-counters N] [--min-flows N] [--thread NAME]... [--process NAME]...
//       [--require-engine-flows] [--summary OUT.json]
//
// Two kinds of checks:
//  * structural, on the raw JSON: the envelope; every event has a name and the
//    fields its phase needs; timestamps are relative microseconds; no two "X"
//    slices on one (pid, tid) partially overlap (compared in integer ns, 1 ns
//    tolerance); every flow id has one "s" and one "f" ("bp":"e") with the same
//    cat and name, each inside a slice of its thread.
//  * through the engine: the trace is parsed by TraceModel.Model.createWithAllHandlers()
//    exactly as the Performance panel does, and what the panel would show is
//    compared with the raw events: every "X" (and "I") slice is in its thread's
//    tree (the engine silently drops a slice that overlaps its parent, even by
//    float rounding of ts + dur), named threads came through, and flows are
//    counted (--require-engine-flows makes a flow the engine cannot bind fail).
//
// What the engine does NOT model, so it is only reported: lowercase "i" instants
// (it handles only "I"), and "C" counters (it only builds Chrome's own memory
// counters), so counters are checked from the raw JSON and from the list of
// events the engine kept.
//
// Prints a JSON summary on stdout (also written to --summary): {"slices": X + i/I,
// "slice_duration_ns_total", "counter_values": C events, "flows", "threads",
// "processes", "names", "engine": {...}}.
// Exit status: 0 pass, 1 a check failed, 2 bad usage or unreadable input.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import * as Trace from '@paulirish/trace_engine';
import {polyfillDOMRect} from '@paulirish/trace_engine/analyze-trace.mjs';

const PROG = 'chrome_check';
const EXIT_OK = 0;
const EXIT_FAIL = 1;
const EXIT_USAGE = 2;
const MAX_REPORTED = 40;
// Timestamps are relative to the start of the profile. 1e13 us is ~115 days:
// anything larger is an absolute (epoch) timestamp written by mistake.
const MAX_RELATIVE_TS_US = 1e13;
// ts/dur are float microseconds; compared as integer ns, a 1 ns slack absorbs
// the rounding of the decimal representation.
const TOLERANCE_NS = 1;
const KNOWN_PHASES = new Set(['M', 'X', 'i', 'I', 'C', 's', 'f']);
const METADATA_NAMES = new Set(['process_name', 'thread_name', 'process_sort_index',
  'thread_sort_index', 'process_labels']);

function usage(msg) {
  if (msg) console.error(`${PROG}: ${msg}`);
  console.error(`usage: node chrome_check.mjs FILE [--min-slices N] [--min-counters N] ` +
    `[--min-flows N] [--thread NAME]... [--process NAME]... [--require-engine-flows] ` +
    `[--summary OUT.json]`);
  process.exit(EXIT_USAGE);
}

function parseArgs(argv) {
  const opts = {file: null, minSlices: 0, minCounters: 0, minFlows: 0, threads: [],
    processes: [], summary: null, requireEngineFlows: false};
  const num = (flag, v) => {
    if (v === undefined || !/^\d+$/.test(v)) usage(`${flag} needs a non-negative integer`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--min-slices': opts.minSlices = num(a, next()); break;
      case '--min-counters': opts.minCounters = num(a, next()); break;
      case '--min-flows': opts.minFlows = num(a, next()); break;
      case '--thread': opts.threads.push(next()); break;
      case '--process': opts.processes.push(next()); break;
      case '--summary': opts.summary = next(); break;
      case '--require-engine-flows': opts.requireEngineFlows = true; break;
      case '-h': case '--help': usage(); break;
      default:
        if (a.startsWith('--')) usage(`unknown option ${a}`);
        if (opts.file) usage(`more than one FILE: ${opts.file}, ${a}`);
        opts.file = a;
    }
  }
  if (!opts.file) usage('FILE is required');
  return opts;
}

class Failures {
  constructor() { this.items = []; this.count = 0; }
  add(msg) {
    this.count++;
    if (this.items.length < MAX_REPORTED) this.items.push(msg);
  }
}

function readTrace(file, fail) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    console.error(`${PROG}: cannot read ${file}: ${e.message}`);
    process.exit(EXIT_USAGE);
  }
  const gzipped = buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
  if (file.endsWith('.gz') && !gzipped) fail.add(`${file} ends in .gz but is not gzip data`);
  if (!file.endsWith('.gz') && gzipped) fail.add(`${file} is gzip data but does not end in .gz`);
  let text;
  try {
    text = gzipped ? zlib.gunzipSync(buf).toString('utf8') : buf.toString('utf8');
  } catch (e) {
    fail.add(`cannot gunzip: ${e.message}`);
    return null;
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    fail.add(`not valid JSON: ${e.message}`);
    return null;
  }
}

const isNum = v => typeof v === 'number' && Number.isFinite(v);
const toNs = us => Math.round(us * 1000);
const describe = (e, i) => `event ${i} (ph ${JSON.stringify(e.ph)}, name ${JSON.stringify(e.name)}` +
  `${e.ts !== undefined ? `, ts ${e.ts}` : ''})`;

// Raw JSON rules. Returns the numbers for the summary; failures go to `fail`.
function checkRaw(doc, fail) {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    fail.add('top level must be an object {"traceEvents": [...], ...}');
    return null;
  }
  if (!Array.isArray(doc.traceEvents)) {
    fail.add('"traceEvents" must be an array');
    return null;
  }
  if (doc.displayTimeUnit !== undefined && !['ms', 'ns'].includes(doc.displayTimeUnit)) {
    fail.add(`"displayTimeUnit" is ${JSON.stringify(doc.displayTimeUnit)}; Chrome accepts "ms" or "ns"`);
  }
  if (doc.otherData !== undefined && (typeof doc.otherData !== 'object' || doc.otherData === null)) {
    fail.add('"otherData" must be an object');
  }

  const slicesByThread = new Map();  // "pid/tid" -> [{start, end, i, name}]
  const flows = new Map();  // id -> {s: [...], f: [...]}
  const threadNames = new Map();  // "pid/tid" -> name
  const processNames = new Map();  // pid -> name
  const names = new Map();
  let slices = 0, instants = 0, upperInstants = 0, counters = 0, durationNs = 0, xCount = 0;

  doc.traceEvents.forEach((e, i) => {
    if (e === null || typeof e !== 'object' || Array.isArray(e)) {
      fail.add(`event ${i} is not an object`);
      return;
    }
    if (typeof e.name !== 'string') {
      fail.add(`${describe(e, i)} has no "name" string (the DevTools trace engine crashes on it)`);
      return;
    }
    if (!KNOWN_PHASES.has(e.ph)) {
      fail.add(`${describe(e, i)}: phase is not one of ${[...KNOWN_PHASES].join(' ')}`);
      return;
    }
    if (!Number.isInteger(e.pid)) fail.add(`${describe(e, i)}: "pid" must be an integer`);
    if (e.ph !== 'M' && e.ph !== 'C' && !Number.isInteger(e.tid)) {
      fail.add(`${describe(e, i)}: "tid" must be an integer`);
    }
    if (e.ph === 'M') {
      if (!METADATA_NAMES.has(e.name)) fail.add(`${describe(e, i)}: unknown metadata event`);
      if (e.name.endsWith('_name')) {
        if (typeof e.args?.name !== 'string') fail.add(`${describe(e, i)}: args.name must be a string`);
        else if (e.name === 'thread_name') threadNames.set(`${e.pid}/${e.tid}`, e.args.name);
        else processNames.set(e.pid, e.args.name);
      } else if (e.name.endsWith('_sort_index') && !Number.isInteger(e.args?.sort_index)) {
        fail.add(`${describe(e, i)}: args.sort_index must be an integer`);
      }
      return;
    }
    if (!isNum(e.ts)) {
      fail.add(`${describe(e, i)}: "ts" must be a number (microseconds)`);
      return;
    }
    if (e.ts < 0 || e.ts > MAX_RELATIVE_TS_US) {
      fail.add(`${describe(e, i)}: ts ${e.ts} is not a relative timestamp in microseconds`);
    }
    if (e.args !== undefined && (typeof e.args !== 'object' || e.args === null || Array.isArray(e.args))) {
      fail.add(`${describe(e, i)}: "args" must be an object`);
    }
    const key = `${e.pid}/${e.tid}`;
    switch (e.ph) {
      case 'X': {
        if (!isNum(e.dur) || e.dur < 0) {
          fail.add(`${describe(e, i)}: "dur" must be a non-negative number (microseconds)`);
          return;
        }
        if (typeof e.cat !== 'string') fail.add(`${describe(e, i)}: "cat" must be a string`);
        const start = toNs(e.ts);
        const dur = toNs(e.dur);
        const end = start + dur;
        if (!slicesByThread.has(key)) slicesByThread.set(key, []);
        slicesByThread.get(key).push({start, end, i, name: e.name});
        slices++; xCount++;
        durationNs += dur;
        names.set(e.name, (names.get(e.name) ?? 0) + 1);
        break;
      }
      case 'i':
      case 'I':
        if (e.s !== undefined && !['t', 'p', 'g'].includes(e.s)) {
          fail.add(`${describe(e, i)}: instant scope "s" must be "t", "p" or "g"`);
        }
        slices++; instants++;
        if (e.ph === 'I') upperInstants++;
        names.set(e.name, (names.get(e.name) ?? 0) + 1);
        break;
      case 'C': {
        const values = Object.values(e.args ?? {});
        if (values.length === 0 || !values.every(isNum)) {
          fail.add(`${describe(e, i)}: a counter needs "args" with at least one numeric series`);
        }
        counters++;
        break;
      }
      case 's':
      case 'f': {
        if (e.id === undefined || e.id === null) {
          fail.add(`${describe(e, i)}: a flow event needs an "id"`);
          return;
        }
        if (e.ph === 'f' && e.bp !== 'e') {
          fail.add(`${describe(e, i)}: flow end must set "bp": "e" (bind to the enclosing slice)`);
        }
        const id = String(e.id);
        if (!flows.has(id)) flows.set(id, {s: [], f: []});
        flows.get(id)[e.ph].push({e, i, key});
        break;
      }
    }
  });

  // Slices on one thread must nest or be disjoint. Sort by start, longest first,
  // and keep the stack of enclosing slices.
  for (const [key, list] of slicesByThread) {
    list.sort((a, b) => a.start - b.start || b.end - a.end || a.i - b.i);
    const stack = [];
    for (const s of list) {
      while (stack.length && stack.at(-1).end <= s.start + TOLERANCE_NS) stack.pop();
      const parent = stack.at(-1);
      if (parent && s.end > parent.end + TOLERANCE_NS) {
        fail.add(`thread ${key}: X slices partially overlap: event ${parent.i} ` +
          `${JSON.stringify(parent.name)} [${parent.start}, ${parent.end}] ns and event ${s.i} ` +
          `${JSON.stringify(s.name)} [${s.start}, ${s.end}] ns (they must nest or be disjoint)`);
        continue;
      }
      stack.push(s);
    }
  }

  // A flow end must sit inside a slice of its thread, or no viewer can attach it.
  const enclosing = (key, ts) => {
    const t = toNs(ts);
    return (slicesByThread.get(key) ?? []).some(s => s.start <= t && t <= s.end);
  };
  let completeFlows = 0;
  for (const [id, {s, f}] of flows) {
    if (s.length !== 1 || f.length !== 1) {
      fail.add(`flow id ${id}: ${s.length} "s" and ${f.length} "f" events; each flow needs ` +
        `exactly one of each`);
      continue;
    }
    const [start, end] = [s[0], f[0]];
    if (start.e.cat !== end.e.cat || start.e.name !== end.e.name) {
      fail.add(`flow id ${id}: "s" (event ${start.i}) and "f" (event ${end.i}) must have the same ` +
        `cat and name (viewers key a flow by cat, name and id)`);
      continue;
    }
    if (end.e.ts < start.e.ts) {
      fail.add(`flow id ${id}: "f" (event ${end.i}) is earlier than its "s" (event ${start.i})`);
      continue;
    }
    for (const [what, ev] of [['"s"', start], ['"f"', end]]) {
      if (!enclosing(ev.key, ev.e.ts)) {
        fail.add(`flow id ${id}: ${what} (event ${ev.i}) at ts ${ev.e.ts} is not inside any X ` +
          `slice of thread ${ev.key}`);
      }
    }
    completeFlows++;
  }

  return {
    slices, instants, upperInstants, xCount, counters, durationNs, flows: completeFlows,
    threadNames, processNames, names, slicesByThread,
  };
}

// Runs the Performance panel's trace engine and reads back what it modelled.
async function checkEngine(doc, raw, fail) {
  polyfillDOMRect();
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  try {
    await model.parse(doc.traceEvents);
  } catch (e) {
    fail.add(`the DevTools trace engine threw while parsing: ${e.stack ?? e}`);
    return null;
  }
  const parsed = model.parsedTrace();
  const data = parsed.data;

  const threads = [];
  let entries = 0, nodes = 0;
  const dropped = [];
  for (const [pid, proc] of data.Renderer.processes) {
    for (const [tid, thread] of proc.threads) {
      const inTree = thread.entries.filter(e => data.Renderer.entryToNode.has(e));
      entries += thread.entries.length;
      nodes += inTree.length;
      threads.push({pid, tid, name: thread.name ?? null, slices: thread.entries.length,
        in_tree: inTree.length, max_depth: thread.tree?.maxDepth ?? 0});
      for (const e of thread.entries) {
        if (!data.Renderer.entryToNode.has(e)) dropped.push({pid, tid, e});
      }
    }
  }

  // Every X and I slice should be a drawn entry of its thread.
  const expected = raw.xCount + raw.upperInstants;
  if (entries !== expected) {
    fail.add(`the engine attached ${entries} slices to threads, the file has ${expected} ` +
      `("X" + "I"); the Performance panel would not show the difference`);
  }
  for (const {pid, tid, e} of dropped.slice(0, 10)) {
    fail.add(`the engine left event ${JSON.stringify(e.name)} at ts ${e.ts} dur ${e.dur} on ` +
      `thread ${pid}/${tid} out of its tree: in float microseconds it starts inside a slice and ` +
      `ends after it (e.g. ts + dur of a child rounds past its parent's end); the Performance ` +
      `panel does not draw it`);
  }
  if (dropped.length > 10) fail.add(`... ${dropped.length - 10} more slices left out of the tree`);

  const engineThreadNames = new Set(threads.map(t => t.name));
  for (const [key, name] of raw.threadNames) {
    if (raw.slicesByThread.has(key) && !engineThreadNames.has(name)) {
      fail.add(`thread ${key} ${JSON.stringify(name)} has slices but the engine shows no ` +
        `thread by that name`);
    }
  }
  const counterEvents = parsed.traceEvents.filter(e => e.ph === 'C').length;
  if (counterEvents !== raw.counters) {
    fail.add(`the engine kept ${counterEvents} "C" events of the file's ${raw.counters}`);
  }
  const counterTracks = new Set(parsed.traceEvents.filter(e => e.ph === 'C')
    .flatMap(e => Object.keys(e.args ?? {}).map(series => `${e.pid}/${e.name}/${series}`)));
  const engineFlows = data.Flows.flows.length;

  return {
    threads_with_events: threads.length,
    threads,
    slices: entries,
    slices_in_tree: nodes,
    lowercase_instants_ignored: raw.instants - raw.upperInstants,
    counter_events: counterEvents,
    counter_tracks: counterTracks.size,
    flows: engineFlows,
    processes: [...data.Meta.processNames.values()].map(e => e.args?.name),
    trace_bounds_us: {min: data.Meta.traceBounds.min, max: data.Meta.traceBounds.max},
    trace_is_generic: data.Meta.traceIsGeneric,
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const fail = new Failures();
  const doc = readTrace(opts.file, fail);
  let summary = null;
  const raw = doc === null ? null : checkRaw(doc, fail);
  // The engine crashes on some malformed events (e.g. no name), so it only
  // runs on a file whose raw structure is sound.
  if (raw !== null) {
    const engine = fail.count === 0 ? await checkEngine(doc, raw, fail) : null;
    summary = {
      slices: raw.slices,
      slice_duration_ns_total: raw.durationNs,
      instants: raw.instants,
      counter_values: raw.counters,
      flows: raw.flows,
      threads: [...raw.threadNames.values()],
      processes: [...raw.processNames.values()],
      names: Object.fromEntries([...raw.names].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
      engine,
    };
    const checks = [['slices', raw.slices, opts.minSlices],
      ['counter values', raw.counters, opts.minCounters], ['flows', raw.flows, opts.minFlows]];
    for (const [what, got, min] of checks) {
      if (got < min) fail.add(`${got} ${what}, expected at least ${min}`);
    }
    for (const name of opts.threads) {
      if (engine && !engine.threads.some(t => t.name === name)) {
        fail.add(`the engine shows no thread named ${JSON.stringify(name)} with events ` +
          `(engine threads: ${JSON.stringify(engine.threads.map(t => t.name))})`);
      }
    }
    for (const name of opts.processes) {
      if (engine && !engine.processes.includes(name)) {
        fail.add(`the engine shows no process named ${JSON.stringify(name)} ` +
          `(engine processes: ${JSON.stringify(engine.processes)})`);
      }
    }
    if (engine && engine.flows < raw.flows) {
      const msg = `the engine binds ${engine.flows} of ${raw.flows} flows: DevTools draws a flow ` +
        `only when its "s" and "f" events have exactly the ts, pid, tid and cat of the slices ` +
        `they start and end on`;
      if (opts.requireEngineFlows) fail.add(msg);
      else console.error(`${PROG}: warning: ${msg}`);
    }
  }

  if (summary) {
    const text = JSON.stringify(summary, null, 2);
    console.log(text);
    if (opts.summary) fs.writeFileSync(opts.summary, text + '\n');
  }
  const base = path.basename(opts.file);
  if (fail.count) {
    for (const msg of fail.items) console.error(`${PROG}: FAIL: ${msg}`);
    if (fail.count > fail.items.length) {
      console.error(`${PROG}: ... and ${fail.count - fail.items.length} more failures`);
    }
    console.error(`${PROG}: ${base}: ${fail.count} failure(s)`);
    process.exitCode = EXIT_FAIL;
  } else {
    console.error(`${PROG}: OK: ${base}`);
    process.exitCode = EXIT_OK;
  }
}

await main();
