'use strict';
// --nap's timer thread (../openloop.js).
const ignore = () => {};

// --nap's timer thread. libuv's timers have millisecond resolution, so the loop cannot sleep for the 0.3-1 ms
// between sends at 1,000-3,000 req/s with setTimeout. A worker thread sleeps instead, in Atomics.wait (a futex
// with a nanosecond timeout), and wakes the loop with a message (libuv's async handle: an eventfd its epoll
// watches, as it watches the sockets). One wake-up is armed at a time; arming again replaces it.
const WAKER_THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const seq = new Int32Array(workerData, 0, 1); // bumped at each arming; -1: stop
const at = new BigInt64Array(workerData, 8, 1); // when to wake the loop (process.hrtime.bigint ns)
let seen = 0;
for (;;) {
  Atomics.wait(seq, 0, seen);
  seen = Atomics.load(seq, 0);
  if (seen < 0) break;
  for (;;) {
    const left = Number(Atomics.load(at, 0) - process.hrtime.bigint()) / 1e6;
    if (left <= 0) {
      parentPort.postMessage(seen);
      break;
    }
    if (Atomics.wait(seq, 0, seen, left) !== 'timed-out') {
      seen = Atomics.load(seq, 0); // armed again (or stopped) meanwhile: wait for the new time
      if (seen < 0) process.exit(0);
    }
  }
}
`;

class Waker {
  // onError(err): the thread failed (the client cannot keep time without it).
  constructor(onError) {
    const { Worker } = require('node:worker_threads');
    const shared = new SharedArrayBuffer(16);
    this.seq = new Int32Array(shared, 0, 1);
    this.at = new BigInt64Array(shared, 8, 1);
    this.onWake = ignore;
    this.thread = new Worker(WAKER_THREAD, { eval: true, workerData: shared });
    // Only the wake-up of the latest arming runs the scheduler; an earlier one (armed, then replaced) is stale.
    this.thread.on('message', (armed) => {
      if (armed !== Atomics.load(this.seq, 0)) return;
      const fn = this.onWake;
      this.onWake = ignore;
      this.thread.unref();
      fn();
    });
    this.thread.on('error', onError);
    this.thread.unref();
  }

  // Call fn once, in ms milliseconds (fractional), unless armed again or disarmed first.
  arm(ms, fn) {
    this.onWake = fn;
    Atomics.store(this.at, 0, process.hrtime.bigint() + BigInt(Math.round(ms * 1e6)));
    Atomics.add(this.seq, 0, 1);
    Atomics.notify(this.seq, 0);
    this.thread.ref(); // an armed wake-up keeps the process alive, as a timer would
  }

  disarm() {
    this.onWake = ignore;
    this.thread.unref();
  }

  close() {
    this.disarm();
    Atomics.store(this.seq, 0, -1);
    Atomics.notify(this.seq, 0);
  }
}

module.exports = { Waker };
