import { type ErrorResponse, toErrorResponse } from '../errors.ts';

/** Awaits a call that must fail and returns what every transport would answer for it. */
export async function errorOf(promise: Promise<unknown>): Promise<ErrorResponse> {
  try {
    await promise;
  } catch (error) {
    return toErrorResponse(error);
  }
  throw new Error('expected an error');
}
