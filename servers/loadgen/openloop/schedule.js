'use strict';
// The open loop's schedule: when each request is due, constant or Poisson from a seeded PRNG (../openloop.js).
// mulberry32: a small, fast 32-bit PRNG; the same seed gives the same stream everywhere.
function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The schedule: a function giving the next send offset (ms from the start) each call.
function makeSchedule(arrivals, rate, seed) {
  const intervalMs = 1000 / rate;
  if (arrivals === 'constant') {
    let i = 0;
    return () => i++ * intervalMs; // i * interval, so no rounding error accumulates
  }
  const rand = mulberry32(seed);
  let t = 0;
  let first = true;
  return () => {
    if (first) {
      first = false;
      return 0;
    }
    t += -Math.log(1 - rand()) * intervalMs; // 1 - u is in (0, 1]: never log(0)
    return t;
  };
}

module.exports = { makeSchedule, mulberry32 };
