/**
 * A successful attempt's record as a settle takes it (`SettledAttempt`), for the storage
 * tests that settle rows by hand.
 */
import type { SettledAttempt } from '../../sender/outbox/outbox.js';

export function successRecord(attempt = 1): SettledAttempt {
  return {
    attempt,
    status: 'success',
    httpStatusCode: 200,
    responseTimeMs: 5,
    errorMessage: null,
    url: 'https://buyer.example/hook',
    firedAt: new Date(),
    completedAt: new Date(),
  };
}
